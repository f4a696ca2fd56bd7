// Summarises a V8 CPU profile written by `node --cpu-prof` into its top functions by self time.
import { readFileSync } from "node:fs";
import { relative } from "node:path";

/** One function's share of a V8 CPU profile: `selfMs` (ms of samples whose top frame is it) and `percent` of the profile. */
export interface SelfTimeEntry {
  functionName: string;
  location: string;
  selfMs: number;
  percent: number;
}

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
  samples: number[];
  timeDeltas: number[];
}

/**
 * Reads a `.cpuprofile` written by `node --cpu-prof` and returns the `top` functions by self time
 * (each sample's time delta, µs in the file, attributed to the sample's node; nodes with the same
 * function and location are merged). `root` shortens file URLs to paths relative to it.
 */
export function summarizeCpuProfile(file: string, top: number, root: string): SelfTimeEntry[] {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byNode = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const self = new Map<string, { functionName: string; location: string; us: number }>();
  let totalUs = 0;
  profile.samples.forEach((nodeId, i) => {
    const frame = byNode.get(nodeId);
    const us = profile.timeDeltas[i] ?? 0;
    totalUs += us;
    if (!frame) return;
    const path = frame.url.startsWith("file://") ? relative(root, new URL(frame.url).pathname) : frame.url;
    const location = path ? `${path}:${frame.lineNumber + 1}` : "";
    const key = `${frame.functionName}@${location}`;
    const entry = self.get(key) ?? { functionName: frame.functionName || "(anonymous)", location, us: 0 };
    entry.us += us;
    self.set(key, entry);
  });
  return [...self.values()]
    .sort((a, b) => b.us - a.us)
    .slice(0, top)
    .map((e) => ({
      functionName: e.functionName,
      location: e.location,
      selfMs: e.us / 1000,
      percent: totalUs > 0 ? (100 * e.us) / totalUs : 0,
    }));
}
