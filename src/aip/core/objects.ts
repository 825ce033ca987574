// The typed model of the seven AIP schemas (spec section 4). Field names are
// the protocol's own (snake_case) so a typed object reads like its encoding.
// Types only, plus the supported type/version table; no validation here.

export type Id = string;
/** Unsigned integer: a number up to 2^53-1, a bigint above (decoders return exactly this form). */
export type Uint = number | bigint;

export interface FileEntry {
  readonly artifact: Id;
  readonly executable: boolean;
}

/** A state's file map: path to entry. A Map, so that paths such as `__proto__` or `1` stay plain keys. */
export type FileMap = ReadonlyMap<string, FileEntry>;

export interface Effect {
  readonly path: string;
  readonly after: FileEntry | null;
  readonly before: FileEntry | null;
}

export interface Capture {
  readonly artifact: Id;
  readonly truncated: boolean;
}

export interface ArtifactData {
  readonly kind: 'file';
  readonly content: Uint8Array;
}

export interface IntentData {
  readonly goal: string;
  readonly title: string;
  readonly context: readonly Id[];
  readonly parents: readonly Id[];
  readonly created_at: string;
  readonly constraints: readonly string[];
}

export interface OperationData {
  readonly inputs: readonly Id[];
  readonly intent: Id;
  readonly effects: readonly Effect[];
  readonly base_state: Id;
}

export interface StateData {
  readonly files: FileMap;
  readonly intents: readonly Id[];
  readonly parents: readonly Id[];
  readonly operations: readonly Id[];
}

export type EvidenceResult = 'pass' | 'fail' | 'unknown';

export interface EvidenceV1Data {
  readonly cwd: string;
  readonly kind: string;
  readonly notes: string;
  readonly state: Id;
  readonly result: EvidenceResult;
  readonly command: string;
  readonly platform: string;
  readonly reporter: string;
  readonly operations: readonly Id[];
  readonly provenance: 'reported';
  readonly recorded_at: string;
}

export interface DecisionData {
  readonly related: readonly Id[];
  readonly decision: string;
  readonly question: string;
  readonly rationale: string;
  readonly created_at: string;
  readonly alternatives: readonly string[];
}

export type Termination = 'exited' | 'signaled' | 'timeout' | 'cancelled' | 'start_error' | 'capture_error';
export type Workspace = 'clean' | 'changed' | 'unknown';

export interface EvidenceV2Data {
  readonly cwd: '.';
  readonly argv: readonly string[];
  readonly kind: string;
  readonly error: string;
  readonly state: Id;
  readonly result: EvidenceResult;
  readonly runner: string;
  readonly stderr: Capture;
  readonly stdout: Capture;
  readonly platform: string;
  readonly exit_code: number | null;
  readonly workspace: Workspace;
  readonly executable: string;
  readonly operations: readonly Id[];
  readonly provenance: 'executed';
  readonly started_at: string;
  readonly timeout_ns: Uint;
  readonly duration_ns: Uint;
  readonly environment: 'inherited';
  readonly finished_at: string;
  readonly termination: Termination;
  readonly output_limit: Uint;
  readonly workspace_error: string;
}

export interface ArtifactV1 {
  readonly type: 'artifact';
  readonly version: 1;
  readonly data: ArtifactData;
}
export interface IntentV1 {
  readonly type: 'intent';
  readonly version: 1;
  readonly data: IntentData;
}
export interface OperationV1 {
  readonly type: 'operation';
  readonly version: 1;
  readonly data: OperationData;
}
export interface StateV1 {
  readonly type: 'state';
  readonly version: 1;
  readonly data: StateData;
}
export interface EvidenceV1 {
  readonly type: 'evidence';
  readonly version: 1;
  readonly data: EvidenceV1Data;
}
export interface DecisionV1 {
  readonly type: 'decision';
  readonly version: 1;
  readonly data: DecisionData;
}
export interface EvidenceV2 {
  readonly type: 'evidence';
  readonly version: 2;
  readonly data: EvidenceV2Data;
}

export type AipObject = ArtifactV1 | IntentV1 | OperationV1 | StateV1 | EvidenceV1 | DecisionV1 | EvidenceV2;
export type Evidence = EvidenceV1 | EvidenceV2;
export type ObjectType = AipObject['type'];

/** `type/version` of a supported schema, e.g. `evidence/2`. */
export type TypeVersion = 'artifact/1' | 'intent/1' | 'operation/1' | 'state/1' | 'evidence/1' | 'decision/1' | 'evidence/2';

export const ALL_TYPE_VERSIONS: readonly TypeVersion[] = [
  'artifact/1',
  'intent/1',
  'operation/1',
  'state/1',
  'evidence/1',
  'decision/1',
  'evidence/2',
];

/** What an original v1-only reader accepts: the six schemas without executed evidence. */
export const V1_ONLY_TYPE_VERSIONS: readonly TypeVersion[] = ALL_TYPE_VERSIONS.filter((pair) => pair !== 'evidence/2');

/** The ID of the root state (vector V1): the same in every repository. */
export const ROOT_STATE_ID: Id = 'd3892a5bf1fef7589daf0d297b76d3a0630d2c516352ce43f758fd34ad632ef6';

export const ROOT_STATE: StateV1 = {
  type: 'state',
  version: 1,
  data: { files: new Map(), intents: [], parents: [], operations: [] },
};
