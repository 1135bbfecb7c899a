/**
 * The address a request came from, as Express reads it: the peer's, or with Express' `trust proxy` setting the
 * client's as the trusted proxies forwarded it. Behind a proxy without that setting every caller shares the
 * proxy's address, and so its rate limit.
 */
export function clientAddress(request: { ip?: string; socket?: { remoteAddress?: string } }): string {
  return request.ip ?? request.socket?.remoteAddress ?? 'unknown';
}
