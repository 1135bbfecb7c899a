/**
 * The edit distance between two words: insertions, deletions, substitutions and swaps of two neighbouring
 * letters each cost 1 (Damerau-Levenshtein, optimal string alignment). Letter case is ignored, so
 * `defaultconcurrency` is as close to `defaultConcurrency` as `defaultConcurrency` itself.
 */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  // Three rows of the (s.length + 1) × (t.length + 1) table: the swap looks two rows back.
  let beforePrevious: number[] = [];
  let previous = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const current = [i];
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let best = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) {
        best = Math.min(best, beforePrevious[j - 2] + 1);
      }
      current.push(best);
    }
    beforePrevious = previous;
    previous = current;
  }
  return previous[t.length];
}

/**
 * The candidate nearest to `word`, when one is near enough to be a slip of the keyboard (see `allowedDistance`);
 * ties go to the candidate listed first. Undefined when none is that near.
 */
export function closestMatch(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const distance = editDistance(word, candidate);
    if (distance < bestDistance && distance <= allowedDistance(word, candidate)) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** How far apart a misspelling may be: a third of the longer word, between 1 and 3 edits. */
function allowedDistance(word: string, candidate: string): number {
  return Math.min(3, Math.max(1, Math.floor(Math.max(word.length, candidate.length) / 3)));
}
