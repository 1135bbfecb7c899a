import { describe, expect, it } from '@jest/globals';
import { Logger, type ArgumentsHost } from '@nestjs/common';
import { DeadLetterNotFoundError } from '../../errors/dead-letter-not-found.error';
import type { ResolvedMessagingOptions } from 'nestjs-reliable-messaging/operations';
import { AdminSessionRevocations } from '../../session/admin-session-revocations.service';
import { resolveAdminOptions } from '../dead-letter-admin.options';
import { ConsoleContext } from './console-context';
import { ConsoleExceptionFilter } from './console-exception.filter';

/** What the filter answered: status, headers and page. */
interface Answer {
  status?: number;
  headers: Record<string, string>;
  body?: string;
}

function answerTo(error: unknown): { answer: Answer; logged: string[] } {
  const console = new ConsoleContext(
    resolveAdminOptions({ tokens: { ops: 'Tq4mV8xK2pR7nW1zL5cH9bY3dF6gJ0sA' }, console: true }),
    {} as ResolvedMessagingOptions,
    new AdminSessionRevocations({} as ResolvedMessagingOptions),
  );
  const filter = new ConsoleExceptionFilter(console);
  const logged: string[] = [];
  (filter as unknown as { logger: Pick<Logger, 'error'> }).logger = {
    error: (message: unknown) => void logged.push(String(message)),
  };
  const answer: Answer = { headers: {} };
  const response = {
    headersSent: false,
    setHeader: (name: string, value: string) => (answer.headers[name.toLowerCase()] = value),
    status(code: number) {
      answer.status = code;
      return this;
    },
    type() {
      return this;
    },
    send: (body: string) => (answer.body = body),
  };
  const request = { method: 'POST', headers: {} };
  const host = {
    switchToHttp: () => ({ getRequest: () => request, getResponse: () => response }),
  } as unknown as ArgumentsHost;
  filter.catch(error, host);
  return { answer, logged };
}

describe('ConsoleExceptionFilter', () => {
  it('shows a failure only as a plain text and an id, and logs the error under that id', () => {
    const internals = 'connect ECONNREFUSED 10.0.0.7:5432 (relation "rm_outbox" at host db-primary)';

    const { answer, logged } = answerTo(new Error(internals));

    expect(answer.status).toBe(500);
    expect(answer.body).not.toContain('ECONNREFUSED');
    expect(answer.body).not.toContain('db-primary');
    const id = /error id ([0-9a-f-]{36})/.exec(answer.body ?? '')?.[1];
    expect(id).toBeDefined();
    expect(logged).toEqual([expect.stringContaining(`error id ${id}): ${internals}`)]);
    expect(answer.headers['content-security-policy']).toBeDefined();
  });

  it('tells a refused request what was wrong, and logs nothing', () => {
    const { answer, logged } = answerTo(new DeadLetterNotFoundError('m-1', ['orders.dlq']));

    expect(answer.status).toBe(404);
    expect(answer.body).toContain('m-1');
    expect(logged).toEqual([]);
  });
});
