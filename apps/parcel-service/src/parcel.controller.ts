import { Controller, Inject, Injectable, Logger } from '@nestjs/common';
import { ClientProxy, Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import type { MessageContext } from 'nestjs-reliable-messaging';

/** The client's token, as it was under Nest's RMQ transport (`ClientsModule.register([{ name: PARCELS }])`). */
export const PARCELS = 'PARCELS';

/** A parcel put on the scale. */
export interface ParcelWeighed {
  parcelId: string;
  grams: number;
}

/** A parcel with its shipping label. */
export interface ParcelLabelled {
  parcelId: string;
  carrier: string;
}

/** The labels printed so far: what the service would hand to its carrier. */
@Injectable()
export class LabelBook {
  readonly labels: ParcelLabelled[] = [];
}

/**
 * A controller in the style of Nest's RMQ transport, served by ReliableMessagingTransport: `parcel.weighed`
 * picks a carrier and emits `parcel.labelled` (through the outbox, in the handler's own transaction), and
 * `parcel.labelled` records the label. A parcel over 30 kg has no carrier: its handler throws, and the module
 * retries it and then dead-letters it.
 *
 * NOTE: `@EventPattern<string>(...)`: with a plain string, Nest 12's typings pick the overload that types every
 * parameter after the payload as `unknown`, which a typed `@Ctx()` parameter does not accept.
 */
@Controller()
export class ParcelController {
  private readonly logger = new Logger('ParcelService');

  constructor(
    @Inject(PARCELS) private readonly parcels: ClientProxy,
    private readonly labels: LabelBook,
  ) {}

  @EventPattern<string>('parcel.weighed', { retry: { maxAttempts: 3, initialDelayMs: 200 } })
  async onWeighed(@Payload() parcel: ParcelWeighed, @Ctx() ctx: MessageContext): Promise<void> {
    if (parcel.grams > 30_000) throw new Error(`no carrier takes ${parcel.grams} g (attempt ${ctx.attempt})`);
    const carrier = parcel.grams > 2_000 ? 'freight' : 'post';
    await lastValueFrom(this.parcels.emit('parcel.labelled', { parcelId: parcel.parcelId, carrier }));
  }

  @EventPattern<string>('parcel.labelled')
  onLabelled(@Payload() label: ParcelLabelled): void {
    this.labels.labels.push(label);
    this.logger.log(`parcel ${label.parcelId} labelled for ${label.carrier}`);
  }
}
