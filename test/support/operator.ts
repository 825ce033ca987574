// The operator and the MCP-side application over storage ports, as the CLI
// and the server compose them, with a manual clock and sequential ids (test
// support shared by the operator suites).
import { createApplication, createOperator, type Application, type Operator, type OperatorStoragePorts } from '../../src/aipcs/core/application.js';
import { TRANSFER_CODEC } from '../../src/aipcs/compose.js';
import type { ServiceDataWriter, StorageLocator } from '../../src/aipcs/core/ports.js';
import type { TransferCodec } from '../../src/aipcs/core/transfer-codec.js';
import { manualClock, sequentialIds } from '../../src/common/clock.js';
import { sha256 } from '../conformance/harness.js';

/**
 * Each operator or application gets ids of its own prefix, far from the
 * small ones tests write by hand (operation ids `…-000000000001`).
 */
let nextIdPrefix = 5000;

export interface TestOperatorOptions {
  readonly principalId?: string;
  readonly codec?: TransferCodec;
  readonly startMicros?: bigint;
  /** How far the clock moves at each reading. */
  readonly stepMicros?: bigint;
  /** Crash tests: a named checkpoint may throw to end the "process" there. */
  readonly checkpoint?: (name: string) => void;
}

function steppingClock(startMicros: bigint, stepMicros: bigint): () => bigint {
  const clock = manualClock(startMicros);
  return () => {
    clock.advance(stepMicros);
    return clock.nowMicros();
  };
}

/** The operator as the admin CLI composes it (created_via cli). */
export function testOperator(storage: OperatorStoragePorts, options: TestOperatorOptions = {}): Operator {
  const ids = sequentialIds(nextIdPrefix++);
  return createOperator(storage, {
    ...(options.checkpoint ? { checkpoint: options.checkpoint } : {}),
    principalId: options.principalId ?? 'agent-a',
    createdVia: 'cli',
    nowMicros: steppingClock(options.startMicros ?? 1_800_000_000_000_000n, options.stepMicros ?? 3n),
    uuid: () => ids.uuid(),
    sha256,
    codec: options.codec ?? TRANSFER_CODEC,
    producer: { packageVersion: '0.0.0-test', mcpContract: '1.2.0' },
  });
}

/** The application as an MCP server process composes it (created_via mcp). */
export function testApplication(storage: OperatorStoragePorts, options: Pick<TestOperatorOptions, 'principalId' | 'startMicros' | 'stepMicros'> = {}): Application {
  const ids = sequentialIds(nextIdPrefix++);
  return createApplication(storage, {
    principalId: options.principalId ?? 'agent-a',
    createdVia: 'mcp',
    nowMicros: steppingClock(options.startMicros ?? 1_700_000_000_000_000n, options.stepMicros ?? 5n),
    uuid: () => ids.uuid(),
    sha256,
  });
}

/** `target` with some of its members replaced; the others are its own, bound to it (adapters are class instances). */
export function overriding<T extends object>(target: T, overrides: Partial<T>): T {
  return new Proxy(target, {
    get(inner, property) {
      if (Object.hasOwn(overrides, property)) return (overrides as Record<PropertyKey, unknown>)[property];
      const value: unknown = Reflect.get(inner, property, inner);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(inner) : value;
    },
  });
}

export interface HeldWriteUnit {
  /** What the unit's fence check answered when it was admitted. */
  readonly sawOpen: boolean;
  /** Lets the unit go on to `rest` and commit. */
  release(): void;
  /** Settles when the unit has ended. */
  readonly ended: Promise<void>;
}

/**
 * A write unit that checks the fence (at `generation`, or the one it reads)
 * and then waits, admitted and uncommitted, until released: what a suspend
 * or an archive must wait for.
 */
export async function heldWriteUnit(
  storage: OperatorStoragePorts,
  locator: StorageLocator,
  options: { readonly generation?: bigint; readonly rest?: (tx: ServiceDataWriter) => Promise<void> } = {},
): Promise<HeldWriteUnit> {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let admitted!: (open: boolean) => void;
  const sawOpen = new Promise<boolean>((resolve) => (admitted = resolve));
  const ended = storage.data.write(locator, 'agent-a', async (tx) => {
    admitted(await tx.fenceIsOpen(options.generation));
    await held;
    await options.rest?.(tx);
  });
  return { sawOpen: await sawOpen, release, ended };
}
