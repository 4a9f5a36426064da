import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLog } from '../src/log.js';
import type { Message } from '../src/messages/domain.js';
import { LogSink } from '../src/messages/sink.js';
import { captureLog } from './helpers.js';

const message = (id: string): Message => ({
  id,
  message: `text of ${id}`,
  status: 'processing',
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  failureReason: null,
});

describe('the log sink', () => {
  it('logs a message only for an account with no endpoint wanting message.sent', async () => {
    const log = captureLog();
    const sink = new LogSink(
      createLog('info', log.stream),
      async (account) => account === 'hooked',
    );
    await sink.deliver(message('msg_a'), 'plain');
    await sink.deliver(message('msg_b'), 'hooked');
    assert.deepEqual(
      log
        .lines()
        .filter((line) => line.msg === 'message sent')
        .map((line) => line.messageId),
      ['msg_a'],
    );
  });

  it("asks once per account for a batch's messages handed over in one turn, again the next", async () => {
    const asked: string[] = [];
    const sink = new LogSink(createLog('silent'), async (account) => {
      asked.push(account);
      return false;
    });
    const batch = (n: number) =>
      Promise.all(
        Array.from({ length: n }, (_, i) => sink.deliver(message(`msg_${i}`), i % 3 ? 'a' : 'b')),
      );
    await batch(12);
    assert.deepEqual(asked.sort(), ['a', 'b']);
    await new Promise((r) => setImmediate(r));
    await batch(3);
    assert.deepEqual(asked.sort(), ['a', 'a', 'b', 'b'], 'a new turn asks again');
  });
});
