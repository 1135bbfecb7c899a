import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Test, type TestingModule } from '@nestjs/testing';
import { IsString } from 'class-validator';
import { MessageType, Saga, SagaInstances, SagaStep, type SagaContext } from 'nestjs-reliable-messaging';
import { MessagingHarness, ReliableMessagingTestingModule } from 'nestjs-reliable-messaging/testing';
import { createMessagingDatabase, type MessagingDatabase } from './support/messaging-database';

@MessageType({ type: 'parcel.booked', idempotencyKey: (m: ParcelBooked) => `booked:${m.parcelId}` })
class ParcelBooked {
  @IsString() parcelId!: string;
}

@MessageType({ type: 'parcel.delivered', idempotencyKey: (m: ParcelDelivered) => `delivered:${m.parcelId}` })
class ParcelDelivered {
  @IsString() parcelId!: string;
}

@MessageType({ type: 'parcel.reminder-due', idempotencyKey: (m: ReminderDue) => `reminder:${m.parcelId}` })
class ReminderDue {
  @IsString() parcelId!: string;
}

const booked = (parcelId: string) => Object.assign(new ParcelBooked(), { parcelId });
const delivered = (parcelId: string) => Object.assign(new ParcelDelivered(), { parcelId });

@Saga({ name: 'parcel' })
class Parcel {
  @SagaStep(ParcelBooked, { correlate: (m) => m.parcelId, onMissing: 'start' })
  onBooked(_event: ParcelBooked, saga: SagaContext<{ booked?: boolean }>): void {
    saga.state.booked = true;
  }

  @SagaStep(ParcelDelivered, { correlate: (m) => m.parcelId })
  onDelivered(_event: ParcelDelivered, saga: SagaContext<{ booked?: boolean }>): void {
    saga.complete();
  }
}

/** Asks for a reminder an hour after booking: with the app's database, a row in rm_scheduled. */
@Saga({ name: 'parcel-reminder' })
class ParcelReminder {
  @SagaStep(ParcelBooked, { correlate: (m) => m.parcelId, onMissing: 'start' })
  async onBooked(event: ParcelBooked, saga: SagaContext): Promise<void> {
    await saga.requestTimeout(Object.assign(new ReminderDue(), { parcelId: event.parcelId }), {
      delayMs: 3_600_000,
    });
  }

  @SagaStep(ReminderDue, { correlate: (m) => m.parcelId })
  onDue(_event: ReminderDue, saga: SagaContext): void {
    saga.complete();
  }
}

describe('sagas under the testing module: the in-memory broker with the app’s database', () => {
  let db: MessagingDatabase;
  let moduleRef: TestingModule;
  let harness: MessagingHarness;
  let instances: SagaInstances;

  beforeAll(async () => {
    db = await createMessagingDatabase();
    moduleRef = await Test.createTestingModule({
      imports: [ReliableMessagingTestingModule.forRoot({ dataSource: db.dataSource })],
      providers: [Parcel, ParcelReminder],
    }).compile();
    await moduleRef.init();
    harness = moduleRef.get(MessagingHarness);
    instances = moduleRef.get(SagaInstances);
  });

  afterAll(async () => {
    await moduleRef?.close();
    await db?.drop();
  });

  it('runs the steps on their queues, once per message, and meets onMissing for an unknown parcel', async () => {
    expect(await harness.deliver('parcel.parcel.booked', booked('p-1'))).toEqual({ kind: 'acked' });
    expect(await harness.deliver('parcel.parcel.booked', booked('p-1'))).toMatchObject({ kind: 'duplicate' });
    expect(await harness.deliver('parcel.parcel.delivered', delivered('p-1'))).toEqual({ kind: 'acked' });
    expect(await harness.deliver('parcel.parcel.delivered', delivered('p-unknown'))).toMatchObject({
      kind: 'dead-lettered',
      reason: 'saga-instance-missing',
    });

    expect(await instances.find('parcel', 'p-1')).toMatchObject({
      status: 'completed',
      version: 2,
      state: { booked: true },
    });
  });

  it("keeps a timeout in the app's rm_scheduled, not on the harness clock", async () => {
    expect(await harness.deliver('parcel-reminder.parcel.booked', booked('p-2'))).toEqual({ kind: 'acked' });

    const [timeout] = (await instances.find('parcel-reminder', 'p-2'))?.pendingTimeouts ?? [];
    const rows = await db.dataSource.query<Array<{ message_id: string }>>(
      `SELECT message_id FROM rm_scheduled`,
    );
    expect(rows.map((row) => row.message_id)).toEqual([timeout?.messageId]);
    await harness.clock.advance(2 * 3_600_000);
    expect(await instances.find('parcel-reminder', 'p-2')).toMatchObject({ status: 'active' });
  });
});
