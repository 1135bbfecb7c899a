import { SagaRefusedError } from '../errors/saga-refused.error';

/** How deep a saga's state may nest; deeper is refused before it is serialised. */
export const MAX_STATE_DEPTH = 32;

/**
 * The state a step left, serialised for the `rm_saga.state` column after checking that it is plain JSON, so that
 * the next step reads back exactly what this one wrote: a plain object at the top; inside, plain objects, arrays,
 * strings, finite numbers, booleans and null. A property set to `undefined` is left out, as JSON.stringify does.
 * Refused (`saga-state-invalid`, dead-lettered): class instances (a Date, a Map), functions, symbols, bigints,
 * NaN and infinities, `undefined` in an array, a `__proto__` key, nesting deeper than MAX_STATE_DEPTH, and a JSON
 * text longer than `maxBytes` bytes.
 */
export function serialiseState(state: unknown, maxBytes: number, step: string): string {
  if (!isPlainObject(state)) {
    throw refused(step, `the state must be a plain object, got ${describe(state)}`);
  }
  const problem = findProblem(state, '$', 0);
  if (problem) throw refused(step, problem);
  const text = JSON.stringify(state);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) {
    throw refused(step, `the state is ${bytes} bytes of JSON, more than maxStateBytes (${maxBytes})`);
  }
  return text;
}

function findProblem(value: unknown, path: string, depth: number): string | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `${path} is ${value}`;
  if (depth >= MAX_STATE_DEPTH) return `${path} nests deeper than ${MAX_STATE_DEPTH} levels`;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (item === undefined) return `${path}[${i}] is undefined`;
      const problem = findProblem(item, `${path}[${i}]`, depth + 1);
      if (problem) return problem;
    }
    return undefined;
  }
  if (!isPlainObject(value)) return `${path} is ${describe(value)}, not plain JSON`;
  for (const key of Object.keys(value)) {
    if (key === '__proto__') return `${path} has a __proto__ key`;
    const item = value[key];
    if (item === undefined) continue;
    const problem = findProblem(item, `${path}.${key}`, depth + 1);
    if (problem) return problem;
  }
  return undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return `a ${value.constructor?.name ?? 'object'}`;
  return `a ${typeof value}`;
}

function refused(step: string, detail: string): SagaRefusedError {
  return new SagaRefusedError('saga-state-invalid', `${step}: ${detail}`);
}
