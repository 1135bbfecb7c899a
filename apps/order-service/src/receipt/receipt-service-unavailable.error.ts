/** The receipt service failed transiently (a timeout, a 503): the same call may succeed later. */
export class ReceiptServiceUnavailableError extends Error {
  override readonly name = 'ReceiptServiceUnavailableError';
}
