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

/** A logger at `level` (warn unless told); each product resolves its own configured level. */
export function createLogger(name: string, level: LogLevel = 'warn'): Logger {
  const write = (at: LogLevel) => (message: string) => {
    if (RANK[at] < RANK[level]) return;
    process.stderr.write(`${name} ${at}: ${message}\n`);
  };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}
