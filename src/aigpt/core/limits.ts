// Every numeric bound of aigpt in one place (spec section 8) plus the fixed
// names of the record tree. Pure constants: no I/O, no logic.

/** The product version reported by `aigpt v` and in MCP serverInfo. */
export { PACKAGE_VERSION as AIGPT_VERSION } from '../../common/package-version.js';

/** Maximum UTF-8 size of one memory text (save_memory content or one compress item). */
export const MAX_MEMORY_TEXT_BYTES = 16 * 1024;
/** Hard ceiling on compress items, whatever the configured limit says. */
export const MAX_COMPRESS_ITEMS = 10_000;
/** A record file larger than this is skipped as unreadable. */
export const MAX_RECORD_FILE_BYTES = 1024 * 1024;
/** At most this many memory files are read; older ones beyond it are skipped and reported. */
export const MAX_RECORDS_READ = 10_000;
/**
 * Bytes one read_memory result (and one instructions build) reads, newest
 * first: a record counts what it adds to the answer line (its re-serialised
 * form, escaped once more as the result text), or its file where that is
 * larger; older memories beyond it are skipped unread and reported. With the
 * skipped entries (at most about 1 MiB) the line stays well below the 10 MiB
 * an MCP SDK client accepts.
 */
export const MAX_READ_MEMORY_BYTES = 6 * 1024 * 1024;
/** Unreadable memory files a read_memory result names one by one; the rest are one entry with their count. */
export const MAX_LISTED_UNREADABLE = 100;
/** Maximum UTF-8 size of the MCP instructions string. */
export const MAX_INSTRUCTIONS_BYTES = 256 * 1024;
/** One JSON-RPC input line on stdio; a longer request is answered with -32600. */
export const MAX_INPUT_LINE_BYTES = 4 * 1024 * 1024;
/**
 * The compress journal is read back (and parsed) within this bound; a compress
 * whose journal would be larger (it names every old record) is refused.
 */
export const MAX_JOURNAL_BYTES = 64 * 1024 * 1024;
/** Config files are small; anything larger is certainly not ours. */
export const MAX_CONFIG_FILE_BYTES = 1024 * 1024;
/**
 * The deepest nesting serde_json reads: its recursion budget of 128 fails on
 * entering the 128th container, so 127 nested arrays or objects parse and 128
 * do not, in the reference as here.
 */
export const MAX_JSON_DEPTH = 127;
/** Default of bot.memory. */
export const DEFAULT_MEMORY_LIMIT = 100n;
/** Largest accepted bot.memory (u64 in the reference). */
export const MAX_MEMORY_LIMIT = 2n ** 64n - 1n;
/** How long a writer waits for the collection lock before giving up. */
export const LOCK_TIMEOUT_MS = 10_000;

export const CONFIG_APP_DIR = 'ai.syui.gpt';
export const CONFIG_FILE_NAME = 'config.json';
/** The site generator's config folder, next to ours; `aigpt setup` links our config to its config.json. */
export const SITE_CONFIG_APP_DIR = 'ai.syui.log';
export const CORE_COLLECTION = 'ai.syui.gpt.core';
export const MEMORY_COLLECTION = 'ai.syui.gpt.memory';
export const CORE_RKEY = 'self';
