import { describe, expect, it } from 'vitest';
import { buildInstructions, limitStatus, truncateUtf8 } from '../../src/aigpt/core/instructions.js';
import { MAX_INSTRUCTIONS_BYTES } from '../../src/aigpt/core/limits.js';

const base = { count: 0, limit: 100n, unreadable: 0, notRead: 0 };

describe('instructions (spec 5.2)', () => {
  it('joins core and memories with blank lines, skipping empty texts, then the status line', () => {
    const text = buildInstructions({ ...base, coreText: 'I am core.', memoryTexts: ['a', '', '  ', 'b'], count: 4 });
    expect(text).toBe('I am core.\n\na\n\n  \n\nb\n\n[aigpt] memory records: 4/100');
  });

  it('is only the status line when nothing else is there', () => {
    expect(buildInstructions({ ...base, coreText: '', memoryTexts: [] })).toBe('[aigpt] memory records: 0/100');
    expect(buildInstructions({ ...base, coreText: undefined, memoryTexts: [] })).toBe('[aigpt] memory records: 0/100');
  });

  it('keeps a memory that fills the bound exactly, beside the core, and omits it one byte below', () => {
    const status = '[aigpt] memory records: 1/100';
    const memory = 'm'.repeat(200);
    const exact = 'core'.length + 2 + memory.length + 2 + status.length;
    expect(buildInstructions({ ...base, coreText: 'core', memoryTexts: [memory], count: 1, maxBytes: exact })).toBe(`core\n\n${memory}\n\n${status}`);
    expect(buildInstructions({ ...base, coreText: 'core', memoryTexts: [memory], count: 1, maxBytes: exact - 1 })).not.toContain(memory);
  });

  it('counts the omitted-memories note of unread memories in the bound, with no core to cut', () => {
    const text = buildInstructions({ count: 4, limit: 100n, unreadable: 0, notRead: 2, coreText: undefined, memoryTexts: ['a'.repeat(20), 'b'.repeat(20)], maxBytes: 113 });
    expect(text).toBe(`${'b'.repeat(20)}\n\n[aigpt] memory records: 4/100 (3 oldest memories omitted for size; use read_memory)`);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(113);
  });

  it('leaves out only the memory too large to sit beside the core, not every memory older than it', () => {
    const text = buildInstructions({ count: 3, limit: 100n, unreadable: 0, notRead: 0, coreText: 'c'.repeat(100), memoryTexts: ['old', 'mid', 'h'.repeat(200)], maxBytes: 300 });
    expect(text).toBe(`${'c'.repeat(100)}\n\nold\n\nmid\n\n[aigpt] memory records: 3/100 (1 oldest memories omitted for size; use read_memory)`);
  });

  it('asks for compress when over the limit and counts unreadable files', () => {
    expect(buildInstructions({ ...base, coreText: undefined, memoryTexts: ['x', 'y', 'z'], count: 4, limit: 3n, unreadable: 1 })).toBe(
      'x\n\ny\n\nz\n\n[aigpt] memory records: 4/3. Over the limit: call compress with at most 3 consolidated items. 1 unreadable memory file(s) were skipped.',
    );
    expect(limitStatus(0, 0n)).toBe('[aigpt] memory records: 0/0');
    expect(limitStatus(1, 0n)).toContain('Over the limit: call compress with at most 0');
    // Above compress's own ceiling the request names what compress accepts,
    // so that an agent following it is not refused.
    expect(limitStatus(20_001, 20_000n)).toBe('[aigpt] memory records: 20001/20000. Over the limit: call compress with at most 10000 consolidated items.');
    expect(limitStatus(10_001, 10_000n)).toBe('[aigpt] memory records: 10001/10000. Over the limit: call compress with at most 10000 consolidated items.');
  });

  it('drops the oldest memories first to stay within the byte bound', () => {
    const memories = ['old-'.padEnd(100, 'x'), 'mid-'.padEnd(100, 'x'), 'new-'.padEnd(100, 'x')];
    const unbounded = buildInstructions({ ...base, coreText: 'core', memoryTexts: memories, count: 3 });
    expect(Buffer.byteLength(unbounded)).toBeGreaterThan(300);
    const text = buildInstructions({ ...base, coreText: 'core', memoryTexts: memories, count: 3, maxBytes: 300 });
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(300);
    expect(text.startsWith('core\n\nmid-')).toBe(true);
    expect(text).not.toContain('old-');
    expect(text).toContain('new-');
    expect(text).toMatch(/\n\n\[aigpt\] memory records: 3\/100 \(1 oldest memories omitted for size; use read_memory\)$/);
  });

  it('keeps everything that fills 256 KiB to the byte and omits the oldest memory one byte beyond it', () => {
    expect(MAX_INSTRUCTIONS_BYTES).toBe(256 * 1024);
    const status = '[aigpt] memory records: 2/100';
    const newest = 'new';
    const exact = 'x'.repeat(256 * 1024 - newest.length - status.length - 2 * 2);
    const fits = buildInstructions({ ...base, coreText: undefined, memoryTexts: [exact, newest], count: 2 });
    expect(fits).toBe(`${exact}\n\n${newest}\n\n${status}`);
    expect(Buffer.byteLength(fits)).toBe(256 * 1024);
    const over = buildInstructions({ ...base, coreText: undefined, memoryTexts: [`${exact}x`, newest], count: 2 });
    expect(over).toBe(`${newest}\n\n${status} (1 oldest memories omitted for size; use read_memory)`);
  });

  it('leaves out a memory too large to fit by itself without taking the older ones with it', () => {
    // Such a file comes from the reference, which bounds no text; the oldest-first
    // rule alone dropped every memory before reaching it.
    const huge = 'h'.repeat(400);
    const text = buildInstructions({ ...base, coreText: 'core', memoryTexts: ['old', 'mid', huge], count: 3, maxBytes: 300 });
    expect(text).toBe('core\n\nold\n\nmid\n\n[aigpt] memory records: 3/100 (1 oldest memories omitted for size; use read_memory)');
    // One that fits beside the core alone is not oversized: the oldest go first, as before.
    const large = 'l'.repeat(280);
    const kept = buildInstructions({ ...base, coreText: 'core', memoryTexts: ['o'.repeat(50), 'm'.repeat(50), large], count: 3, maxBytes: 400 });
    expect(kept).toBe(`core\n\n${large}\n\n[aigpt] memory records: 3/100 (2 oldest memories omitted for size; use read_memory)`);
  });

  it('counts the memories left unread by the read bound among the omitted ones', () => {
    const text = buildInstructions({ ...base, coreText: 'core', memoryTexts: ['newest'], count: 3, notRead: 2 });
    expect(text).toBe('core\n\nnewest\n\n[aigpt] memory records: 3/100 (2 oldest memories omitted for size; use read_memory)');
  });

  it('truncates an oversized core without splitting characters', () => {
    const text = buildInstructions({ ...base, coreText: 'é'.repeat(500), memoryTexts: ['m'], count: 1, maxBytes: 300 });
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(300);
    expect(text).toContain('core text truncated');
    expect(text).not.toContain('\ufffd');
    expect(truncateUtf8('aé😀', 3)).toBe('aé');
    expect(truncateUtf8('aé😀', 6)).toBe('aé');
    expect(truncateUtf8('aé😀', 7)).toBe('aé😀');
  });
});
