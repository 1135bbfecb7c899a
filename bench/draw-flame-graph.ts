import { readFileSync, writeFileSync } from 'node:fs';
import { callTree, flameGraphSvg, timeByKind, type CpuProfile } from './flame-graph';

/**
 * Draws a `.cpuprofile` (from `BENCH_PROFILE_DIR`, say) as an SVG flame graph and prints its busy time by whose
 * code ran:
 *
 *   npm run build && node dist/bench/draw-flame-graph.js <in.cpuprofile> <out.svg> [title]
 */
function main(): void {
  const [input, output, title] = process.argv.slice(2);
  if (!input || !output) {
    process.stderr.write('usage: draw-flame-graph <in.cpuprofile> <out.svg> [title]\n');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(input, 'utf8')) as CpuProfile;
  writeFileSync(output, flameGraphSvg(profile, { title: title ?? input }));
  const tree = callTree(profile);
  const kinds = timeByKind(tree);
  const ms = (us: number): string => `${(us / 1000).toFixed(0)} ms`;
  process.stdout.write(
    `${output}: busy ${ms(tree.totalUs)}; ` +
      Object.entries(kinds)
        .map(([kind, us]) => `${kind} ${ms(us)}`)
        .join(', ') +
      '\n',
  );
}

main();
