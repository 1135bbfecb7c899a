/**
 * Flame graphs of V8 CPU profiles (`.cpuprofile`, as `node --cpu-prof` and the inspector write them), drawn as
 * SVG for docs/benchmarks.md: each box a function in its call stack, as wide as the time spent in it and below
 * it, coloured by whose code it is. Idle time is left out, so the width is the process's busy time.
 */

/** The parts of a `.cpuprofile` a flame graph reads. */
export interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }>;
  samples: number[];
  timeDeltas: number[];
}

/** Whose code a frame runs: the colours of the graph. */
export type FrameKind = 'module' | 'app' | 'library' | 'node' | 'gc' | 'other';

/** A frame of the merged call tree: the time in it (`selfUs`) and below it (`totalUs`). */
export interface Frame {
  label: string;
  kind: FrameKind;
  selfUs: number;
  totalUs: number;
  children: Frame[];
}

/** Frames V8 reports for time outside JavaScript; idle time is not busy time and is dropped. */
const IDLE = '(idle)';

/** Where a script lives, shortly: a package's name, a Node internal, or our own path from `libs/`, `apps/` or `bench/`. */
export function whereOf(url: string): { where: string; kind: FrameKind } {
  if (url === '') return { where: '', kind: 'other' };
  if (url.startsWith('node:')) return { where: url, kind: 'node' };
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const parts = url.slice(modules + '/node_modules/'.length).split('/');
    return { where: parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0], kind: 'library' };
  }
  const own = /\/(libs|apps|bench)\/(.*?)(\.[cm]?js|\.ts)?$/.exec(url);
  if (own) {
    const path = `${own[1]}/${own[2]}`.replace('/src/', '/');
    return { where: path, kind: own[1] === 'libs' ? 'module' : 'app' };
  }
  return { where: url.slice(url.lastIndexOf('/') + 1), kind: 'other' };
}

function labelOf(frame: CpuProfile['nodes'][number]['callFrame']): { label: string; kind: FrameKind } {
  const name = frame.functionName || '(anonymous)';
  if (name === '(garbage collector)') return { label: name, kind: 'gc' };
  const { where, kind } = whereOf(frame.url);
  return { label: where ? `${name} (${where})` : name, kind };
}

/**
 * The profile's call tree with each node's self time from its samples (a sample's time is the gap to the next
 * one), idle time dropped, and siblings of the same label merged (V8 keeps one node per call site and line).
 */
export function callTree(profile: CpuProfile): Frame {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const gap = profile.timeDeltas[i + 1] ?? 0;
    selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + Math.max(0, gap));
  }
  const referenced = new Set(profile.nodes.flatMap((node) => node.children ?? []));
  const roots = profile.nodes.filter((node) => !referenced.has(node.id));
  const root: Frame = { label: 'all', kind: 'other', selfUs: 0, totalUs: 0, children: [] };
  const add = (into: Frame, id: number): void => {
    const node = byId.get(id);
    if (!node || node.callFrame.functionName === IDLE) return;
    const { label, kind } = labelOf(node.callFrame);
    let frame = into.children.find((child) => child.label === label);
    if (!frame) {
      frame = { label, kind, selfUs: 0, totalUs: 0, children: [] };
      into.children.push(frame);
    }
    frame.selfUs += selfUs.get(id) ?? 0;
    for (const child of node.children ?? []) add(frame, child);
  };
  // V8's own root, "(root)", is the tree's one root; its children are the stacks' bottoms.
  for (const top of roots) for (const child of top.children ?? []) add(root, child);
  const total = (frame: Frame): number => {
    frame.totalUs = frame.selfUs + frame.children.reduce((sum, child) => sum + total(child), 0);
    frame.children.sort((a, b) => (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
    return frame.totalUs;
  };
  total(root);
  return root;
}

/** The busy time of a profile's frames of each kind, in microseconds (self time, summed). */
export function timeByKind(tree: Frame): Record<FrameKind, number> {
  const sums: Record<FrameKind, number> = { module: 0, app: 0, library: 0, node: 0, gc: 0, other: 0 };
  const walk = (frame: Frame): void => {
    sums[frame.kind] += frame.selfUs;
    frame.children.forEach(walk);
  };
  tree.children.forEach(walk);
  return sums;
}

const HUES: Record<FrameKind, [number, number]> = {
  module: [205, 225], // blue: this repository's module
  app: [100, 130], // green: the order app and the benchmark's own code
  library: [25, 50], // orange: packages from node_modules
  node: [0, 0], // grey: Node's internals
  gc: [350, 360], // red: garbage collection
  other: [0, 0], // grey: native and unknown frames
};

function colourOf(frame: Frame): string {
  let hash = 0;
  for (let i = 0; i < frame.label.length; i++) hash = (hash * 31 + frame.label.charCodeAt(i)) >>> 0;
  const [from, to] = HUES[frame.kind];
  const hue = from + (hash % (to - from + 1));
  const grey = frame.kind === 'node' || frame.kind === 'other';
  const saturation = grey ? 0 : 55 + (hash % 20);
  const lightness = grey ? 72 + (hash % 12) : 62 + ((hash >> 8) % 14);
  return `hsl(${hue},${saturation}%,${lightness}%)`;
}

const escapeXml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Drawing options: the title, the width in pixels, and the narrowest box drawn. */
export interface FlameGraphOptions {
  title: string;
  width?: number;
  minWidthPx?: number;
}

/** An SVG flame graph of `profile`: stacks grow upwards, each box's width its share of the busy time. */
export function flameGraphSvg(profile: CpuProfile, options: FlameGraphOptions): string {
  const width = options.width ?? 1200;
  const minWidth = options.minWidthPx ?? 1;
  const rowHeight = 16;
  const fontSize = 11;
  const charWidth = fontSize * 0.59;
  const tree = callTree(profile);
  const scale = tree.totalUs > 0 ? (width - 20) / tree.totalUs : 0;
  const boxes: Array<{ frame: Frame; x: number; depth: number; w: number }> = [];
  const place = (frame: Frame, x: number, depth: number): void => {
    const w = frame.totalUs * scale;
    if (w < minWidth) return;
    boxes.push({ frame, x, depth, w });
    let at = x;
    for (const child of frame.children) {
      place(child, at, depth + 1);
      at += child.totalUs * scale;
    }
  };
  place(tree, 10, 0);
  const depth = boxes.reduce((max, box) => Math.max(max, box.depth), 0);
  const top = 48;
  const height = top + (depth + 1) * rowHeight + 10;
  const kinds = timeByKind(tree);
  const share = (us: number): string => `${((100 * us) / Math.max(1, tree.totalUs)).toFixed(1)}%`;
  const legend = (
    [
      ['module', 'the module'],
      ['app', 'app and benchmark'],
      ['library', 'packages'],
      ['node', 'Node and native'],
      ['gc', 'garbage collection'],
    ] as const
  )
    .map(([kind, name]) => {
      const us = kind === 'node' ? kinds.node + kinds.other : kinds[kind];
      return `${name} ${share(us)}`;
    })
    .join(' · ');
  const lines = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ` +
      `font-family="Verdana, sans-serif" font-size="${fontSize}">`,
    `<rect width="100%" height="100%" fill="#fdfdf8"/>`,
    `<text x="${width / 2}" y="18" font-size="14" text-anchor="middle">${escapeXml(options.title)}</text>`,
    `<text x="${width / 2}" y="36" text-anchor="middle" fill="#444">` +
      `${escapeXml(`busy ${(tree.totalUs / 1000).toFixed(0)} ms of CPU: ${legend}`)}</text>`,
  ];
  for (const { frame, x, depth: level, w } of boxes) {
    const y = height - 10 - (level + 1) * rowHeight;
    const tip = `${frame.label}: ${(frame.totalUs / 1000).toFixed(1)} ms, ${share(frame.totalUs)} (self ${(frame.selfUs / 1000).toFixed(1)} ms)`;
    const fits = Math.floor((w - 6) / charWidth);
    const text =
      fits < 3
        ? ''
        : `<text x="${(x + 3).toFixed(1)}" y="${y + 11.5}">${escapeXml(
            frame.label.length <= fits ? frame.label : `${frame.label.slice(0, fits - 2)}..`,
          )}</text>`;
    lines.push(
      `<g><title>${escapeXml(tip)}</title><rect x="${x.toFixed(1)}" y="${y}" width="${w.toFixed(1)}" ` +
        `height="${rowHeight - 1}" rx="2" fill="${frame === tree ? '#ddd' : colourOf(frame)}"/>${text}</g>`,
    );
  }
  lines.push('</svg>');
  return `${lines.join('\n')}\n`;
}
