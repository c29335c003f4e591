// The README's table of which layer covers which way of uninstalling (between
// the markers), from the table `drainguard check` prints it from: src/check/layers.ts.

import { layersMarkdown } from '../../src/check/layers.ts';

export const LAYERS_BEGIN = '<!-- layers:begin -->';
export const LAYERS_END = '<!-- layers:end -->';

/** DOCUMENT with the table between the markers renewed. */
export function withLayersTable(document: string, table = layersMarkdown()): string {
  const begin = document.indexOf(LAYERS_BEGIN);
  const end = document.indexOf(LAYERS_END);
  if (begin === -1 || end < begin) throw new Error(`README.md: the markers ${LAYERS_BEGIN} and ${LAYERS_END} are missing`);
  return `${document.slice(0, begin + LAYERS_BEGIN.length)}\n${table}\n${document.slice(end)}`;
}
