import type { DemoContext, DemoStep } from './demo-step';
import { sampleOrder } from './place-orders.step';

/** The note's length in characters: above OrderPlaced's claim-check threshold, within the API's limit. */
const NOTE_CHARACTERS = 24_000;

/**
 * Places one order with a large note (a gift message pasted in full). OrderPlaced carries the note through the
 * claim check: the outbox row holds a reference, the note is in `rm_claim_check`, and the order saga gets it back
 * before validation. The order must then settle like every other; the check shows what went on the wire.
 */
export class LargeNoteStep implements DemoStep {
  get title(): string {
    return `one order with a ${NOTE_CHARACTERS / 1000} k-character note, sent through the claim check`;
  }

  async run({ api, database, ledger, signal }: DemoContext): Promise<void> {
    const note = 'Happy birthday! '.repeat(Math.ceil(NOTE_CHARACTERS / 16)).slice(0, NOTE_CHARACTERS);
    const { status, body } = await api.placeOrder({ ...sampleOrder(0), note }, signal);
    const id = (body as { id?: unknown } | undefined)?.id;
    if (status !== 201 || typeof id !== 'string') {
      ledger.rejectedOrders.push(`the order with a large note: HTTP ${status} ${JSON.stringify(body)}`);
      return;
    }
    ledger.orderIds.push(id);
    ledger.checks.push({
      name: 'claim check',
      verify: async () => {
        const { rows } = await database.query<{
          wire: number;
          reference: string | null;
          stored: number | null;
        }>(
          `SELECT octet_length(o.body) AS wire, o.properties->'headers'->>'rm-claim-check' AS reference, ` +
            `(SELECT octet_length(c.body) FROM rm_claim_check c ` +
            `WHERE 'postgres:' || c.id::text = o.properties->'headers'->>'rm-claim-check') AS stored ` +
            `FROM rm_outbox o WHERE o.properties->'headers'->>'rm-idempotency-key' = $1`,
          [`order-placed:${id}`],
        );
        const [row] = rows;
        if (!row) return { summary: 'not seen', problem: `no outbox row for the OrderPlaced of order ${id}` };
        const summary = `a ${note.length}-character note kept in rm_claim_check (${row.stored ?? 0} B), ${row.wire} B of OrderPlaced on the wire`;
        if (!row.reference || row.stored === null) {
          return {
            summary,
            problem: `the OrderPlaced of order ${id} carried its note inline, not by reference`,
          };
        }
        return { summary };
      },
    });
  }
}
