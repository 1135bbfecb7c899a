/**
 * For tests, imported as `@app/reliable-messaging/testing`. Today it holds the fault points, which stop the module
 * at one exact moment (between a handler's commit and its ack, between the broker's confirm and the outbox's mark)
 * so a test can kill the process there and prove nothing is lost or applied twice.
 */

/** Install fault points before the app starts; the function returned removes them. */
export {
  installFaultPoints,
  type FaultPoints,
  type AckFault,
  type RelayOutcome,
} from './testing/fault-points';
