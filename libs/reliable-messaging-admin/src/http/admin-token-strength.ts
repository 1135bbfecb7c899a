/** The fewest characters an admin token (or the console's session secret) may have. */
export const MIN_TOKEN_LENGTH = 32;

/**
 * The fewest bits of entropy a token's characters must show, estimated as below. The estimate reads a random
 * token low (a 32-character hex token holds 128 random bits but scores 92 to 125), so the bar sits where no
 * token from `openssl rand -hex 16` or longer falls short, and every repeated letter or short alphabet does.
 */
export const MIN_TOKEN_ENTROPY_BITS = 80;

/**
 * What is wrong with a secret as an admin token, or undefined when it will do. Length alone lets
 * `aaaa...` through, so the entropy its characters show is estimated too: its length times the Shannon entropy
 * of its character frequencies. The estimate cannot prove a token random, only catch the plainly guessable
 * (repeated letters, short alphabets); `openssl rand -hex 32` scores 213 bits or more.
 */
export function tokenWeakness(secret: string): string | undefined {
  if (secret.length < MIN_TOKEN_LENGTH) return `must be at least ${MIN_TOKEN_LENGTH} characters`;
  const bits = estimatedEntropyBits(secret);
  if (bits < MIN_TOKEN_ENTROPY_BITS) {
    return (
      `is too easy to guess: its characters show about ${Math.floor(bits)} bits of entropy, ` +
      `at least ${MIN_TOKEN_ENTROPY_BITS} are needed (a random token, not a word or a repeated letter)`
    );
  }
  return undefined;
}

/** The length of `text` times the Shannon entropy, in bits, of its characters' frequencies. */
export function estimatedEntropyBits(text: string): number {
  const characters = [...text];
  const counts = new Map<string, number>();
  for (const character of characters) counts.set(character, (counts.get(character) ?? 0) + 1);
  let perCharacter = 0;
  for (const count of counts.values()) {
    const share = count / characters.length;
    perCharacter -= share * Math.log2(share);
  }
  return perCharacter * characters.length;
}
