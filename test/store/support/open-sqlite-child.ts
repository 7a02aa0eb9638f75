// Child process for the migration race test: opens (and so migrates) the SQLite file given as argv[2].
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.ts';

const path = process.argv[2];
if (!path) throw new Error('usage: open-sqlite-child <path>');
const store = new SqliteStore({ path });
await store.putSettingIfAbsent(`opened-by-${process.pid}`, 'yes');
await store.close();
process.stdout.write('ok\n');
