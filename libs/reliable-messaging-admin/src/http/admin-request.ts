import { BadRequestException, NotFoundException } from '@nestjs/common';
import { DeadLetterNotFoundError } from '../errors/dead-letter-not-found.error';
import { EmptySelectionError } from '../errors/empty-selection.error';
import { InvalidDeadLetterQueryError } from '../errors/invalid-dead-letter-query.error';
import { OutboxRowNotFoundError } from '../errors/outbox-row-not-found.error';
import { SagaInstanceNotFoundError } from '../errors/saga-instance-not-found.error';
import type { ResolvedDeadLetterAdminOptions } from './dead-letter-admin.options';

/** A request's query or JSON body, as the admin controllers read it. */
export type AdminInput = Record<string, unknown>;

/** A request's `limit`: the batch size when none is given; refused above it. */
export function limitOf(value: unknown, options: ResolvedDeadLetterAdminOptions): number {
  if (value === undefined || value === null || value === '') return options.maxBatchSize;
  // Only a number or text: Number() of an object whose `toString` is not a function throws a TypeError (a 500).
  const limit = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > options.maxBatchSize) {
    throw new InvalidDeadLetterQueryError(
      `'limit' must be an integer from 1 to ${options.maxBatchSize} (this API's batch size); repeat the request for more`,
    );
  }
  return limit;
}

/** A boolean field of a body; false when absent. */
export function flagOf(input: AdminInput | undefined, name: string): boolean {
  const value = input?.[name];
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new InvalidDeadLetterQueryError(`'${name}' must be true or false`);
  return value;
}

/** The audit note of a body. */
export function noteOf(input: AdminInput | undefined): string | undefined {
  const note = input?.note;
  if (note === undefined) return undefined;
  if (typeof note !== 'string' || note.length > 1000) {
    throw new InvalidDeadLetterQueryError("'note' must be a string of at most 1000 characters");
  }
  return note;
}

/** Runs a request's work, answering a query it cannot run with 400 and a selection that finds nothing with 404. */
export async function answer<T>(work: () => Promise<T> | T): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof InvalidDeadLetterQueryError) throw new BadRequestException(error.message);
    if (
      error instanceof DeadLetterNotFoundError ||
      error instanceof OutboxRowNotFoundError ||
      error instanceof SagaInstanceNotFoundError ||
      error instanceof EmptySelectionError
    ) {
      throw new NotFoundException(error.message);
    }
    throw error;
  }
}
