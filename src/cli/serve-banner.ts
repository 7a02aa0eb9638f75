import { TaskplaneError } from '../core/errors.ts';

/** What `taskplane serve` tells a person at start, apart from the command's wiring. */

/** A listen failure names the flag that changes it. */
export function withFlagHint(err: unknown): unknown {
  if (!(err instanceof TaskplaneError) || err.code !== 'config') return err;
  if (err.field === 'port')
    return new TaskplaneError('config', `${err.message}: choose another with --port (0 = any free port)`, {
      field: 'port',
    });
  if (err.field === 'bind')
    return new TaskplaneError('config', `${err.message}: choose another with --bind`, { field: 'bind' });
  return err;
}

const DEFAULT_URL = 'http://127.0.0.1:8080';
const DEFAULT_DB = 'sqlite:./data/taskplane.db';

/**
 * The API key lines of the banner. The generated key is shown on the start that made it, with a `try:`
 * line that works pasted into a shell in this directory (`npx`, and `--url` off the default port).
 * Later starts say where the key came from and how to mint another, since only its hash is stored.
 */
export function keyLines(
  server: { url: string; generatedApiKey: string | null },
  db: string,
  firstStartKey: boolean,
): string[] {
  const url = server.url === DEFAULT_URL ? '' : ` --url ${server.url}`;
  if (server.generatedApiKey)
    return [
      `  API key (tenant "default", shown once; only its hash is stored): ${server.generatedApiKey}`,
      `  try: TASKPLANE_API_KEY=${server.generatedApiKey} npx taskplane tasks list${url}`,
    ];
  if (!firstStartKey) return [];
  const dbFlag = db === DEFAULT_DB ? '' : ` --db ${db}`;
  return [
    "  API key: the one printed at this database's first start (only its hash is stored)",
    `  new key: npx taskplane keys create --tenant default${dbFlag}`,
    `  try: TASKPLANE_API_KEY=<key> npx taskplane tasks list${url}`,
  ];
}
