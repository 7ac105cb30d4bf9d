import { ACCESS_RULES, PRINCIPAL_KINDS, type AccessRule, type Grant } from '../../../src/server/access/index.js';

/** `:org` → `{org}`, as the document writes paths. */
const template = (route: string): string => route.replace(/:(\w+)/g, '{$1}');

function grantText(grant: Grant): string {
  if (grant === true) return 'yes';
  if ('noApiKey' in grant) return 'yes ³';
  return 'ownDevice' in grant ? 'own device' : grant.methods.map((m) => `\`${m}\``).join(', ');
}

function row(rule: AccessRule): string {
  const cells = PRINCIPAL_KINDS.map((kind) => {
    if (rule.allow === 'anyone') return 'yes';
    const grant = rule.allow[kind];
    return grant === undefined ? '—' : grantText(grant);
  });
  const scope = rule.scope === 'org-in-path' ? ' ¹' : rule.scope === 'user-in-path' ? ' ²' : '';
  const who = rule.allow === 'anyone' ? ' (no token)' : '';
  return `| ${rule.entry} | \`${rule.method} ${template(rule.route)}\`${scope}${who} | ${cells.join(' | ')} |`;
}

/** The access table as docs/protocol.md shows it, rendered from src/server/access/rules.ts. */
export function accessTableMarkdown(): string {
  return [
    `| entry | route | ${PRINCIPAL_KINDS.join(' | ')} |`,
    `|---|---|${PRINCIPAL_KINDS.map(() => '---').join('|')}|`,
    ...ACCESS_RULES.map(row),
  ].join('\n');
}
