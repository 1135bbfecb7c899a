/** Why a JSON body from outside was refused by `parseUntrustedJson()`. */
export type UntrustedJsonReason =
  | 'invalid-utf8'
  | 'malformed-json'
  | 'too-deep'
  | 'too-many-elements'
  | 'too-many-keys'
  | 'key-too-long'
  | 'string-too-long'
  | 'number-out-of-range'
  | 'forbidden-key'
  | 'duplicate-key'
  | 'nul-character'
  | 'lone-surrogate';

/**
 * A JSON body that `parseUntrustedJson()` refused. The message starts with the path of the offending value
 * (`items.0.sku`, or `body` for the whole) and says what is wrong, without quoting more than a short excerpt of the
 * input, so it can be returned to the client as it is.
 */
export class UntrustedJsonError extends Error {
  override readonly name = 'UntrustedJsonError';
  constructor(
    readonly reason: UntrustedJsonReason,
    /** Dotted path of the offending value; empty for the body as a whole. */
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}
