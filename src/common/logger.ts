// The one logger: plain lines on stderr, because stdout carries MCP traffic on
// stdio. Callers log fixed texts and codes, never input values or internals.

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export function parseLogLevel(text: string | undefined, fallback: LogLevel = 'warn'): LogLevel {
  const value = text?.trim().toLowerCase();
  return value !== undefined && value in RANK ? (value as LogLevel) : fallback;
}

export function createLogger(name: string, level: LogLevel = parseLogLevel(process.env['AIPCS_LOG_LEVEL'])): Logger {
  const write = (at: LogLevel) => (message: string) => {
    if (RANK[at] < RANK[level]) return;
    process.stderr.write(`${name} ${at}: ${message}\n`);
  };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}
