// docs/errors.md, whole, from the table of error codes in src/errors.ts.

import { ERRORS, type ErrorSpec } from '../../src/errors.ts';

export const ERRORS_DOC = 'docs/errors.md';

const cell = (text: string): string => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

export function errorsDoc(table: Readonly<Record<string, ErrorSpec>> = ERRORS): string {
  const rows = Object.entries(table).map(
    ([code, e]) => `| \`${code}\` | ${e.exit ?? 'the connection is closed'} | ${cell(e.meaning)} | ${cell(e.fix)} |`,
  );
  return `# Error codes

<!-- Generated from src/errors.ts by npm run generate; a test fails when it is out of date. -->

Every error drainguard shows carries a stable code, written before its message: on the
command's last line on stderr (\`drainguard run: DG_CONFIG_DURATION: DRAINGUARD_STOP_TIMEOUT:
expected a duration ...\`), in the \`error\` field of a log line (and the \`code\` field where the
line is about one failure), and at the start of the drain protocol's \`error\` message
(\`{"type":"error","message":"DG_PROTOCOL_JSON: invalid JSON"}\`). A code keeps its meaning
across releases; the text after it may change, so match on the code.

Exit status 2 is a usage or configuration error found before anything was started; 1 is
any other failure of drainguard itself. A wrapped operator's own exit status is passed on
unchanged and has no code.

| code | exit | what it means | what to do |
|---|---|---|---|
${rows.join('\n')}
`;
}
