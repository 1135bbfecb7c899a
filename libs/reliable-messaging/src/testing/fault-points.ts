import { OutboxStore, type RelayOutcome } from '../outbox/outbox-store.service';
import { InboundDelivery } from '../pipeline/inbound-delivery';

/**
 * What a fault point does with a handled delivery's acknowledgement: `undefined` (or 0) sends it now, a number
 * sends it that many ms later, and `'hold'` never sends it, as if the process died between commit and ack.
 */
export type AckFault = number | 'hold' | undefined;

/**
 * Moments a crash can hit that random timing rarely finds, for tests and fault harnesses that must stop the module
 * at one exact point and then kill or disconnect it. Install them before the app starts; the function returned
 * removes them. Never install them in production: they replace methods of the module's own classes, so nothing of
 * this reaches the delivery path unless a test asks for it.
 */
export interface FaultPoints {
  /**
   * A delivery's handler has committed and its ack is about to be sent: say what happens to the ack. `type` is the
   * message's type, for a point that aims at one step of a flow.
   */
  beforeAck?: (messageId: string | undefined, type: string | undefined) => AckFault;
  /**
   * The relay holds the broker's confirms (or refusals) for a batch and is about to mark its rows. The relay waits
   * for the promise returned: one that never settles stops it here, with the rows still pending.
   */
  beforeMarkRelayed?: (outcomes: readonly RelayOutcome[]) => Promise<void> | void;
  /** The relay has marked a batch: `published` holds the ids of the rows now marked published. */
  afterMarkRelayed?: (published: readonly string[]) => void;
}

export type { RelayOutcome };

let installed = false;

/** Installs the fault points; returns the function that removes them. One set is installed at a time. */
export function installFaultPoints(points: FaultPoints): () => void {
  if (installed) throw new Error('fault points are installed already: remove them before installing others');
  installed = true;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- the replacement calls the original with .call(this)
  const ack = InboundDelivery.prototype.ack;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- the replacement calls the original with .call(this)
  const complete = OutboxStore.prototype.complete;
  const { beforeAck, beforeMarkRelayed, afterMarkRelayed } = points;
  if (beforeAck) {
    InboundDelivery.prototype.ack = function (this: InboundDelivery): boolean {
      if (this.isSettled) return false;
      const fault = beforeAck(this.envelope?.messageId, this.envelope?.type);
      if (fault === 'hold') return false;
      if (!fault) return ack.call(this);
      setTimeout(() => ack.call(this), fault);
      return true;
    };
  }
  if (beforeMarkRelayed || afterMarkRelayed) {
    OutboxStore.prototype.complete = async function (this: OutboxStore, runner, outcomes) {
      await beforeMarkRelayed?.(outcomes);
      await complete.call(this, runner, outcomes);
      afterMarkRelayed?.(outcomes.filter((o) => o.outcome === 'published').map((o) => o.id));
    };
  }
  return () => {
    InboundDelivery.prototype.ack = ack;
    OutboxStore.prototype.complete = complete;
    installed = false;
  };
}
