/**
 * The length of `text` in Unicode code points, which is how PostgreSQL counts the characters of a `varchar(n)`.
 * `String.length` counts UTF-16 code units (an emoji is 2), and class-validator's `@MaxLength` counts neither: it
 * leaves out variation selectors, so a string it passes can still overflow the column.
 */
export function countCodePoints(text: string): number {
  let count = 0;
  for (let at = 0; at < text.length; at += 1) {
    const unit = text.charCodeAt(at);
    // A low surrogate right after a high one belongs to the same code point.
    if (unit >= 0xdc00 && unit <= 0xdfff && at > 0) {
      const previous = text.charCodeAt(at - 1);
      if (previous >= 0xd800 && previous <= 0xdbff) continue;
    }
    count += 1;
  }
  return count;
}
