/** One numbered, forward-only schema step, bundled in the code. Append new ones; never edit a released one. */
export interface Migration {
  id: number;
  name: string;
  sql: string;
}
