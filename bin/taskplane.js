#!/usr/bin/env node
// The compiled CLI (`npm run build` writes dist/; `npm install` in a clone runs it through `prepare`).
try {
  await import('../dist/cli/main.js');
} catch (err) {
  if (err?.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli/main.js')) {
    console.error('taskplane: dist/ is missing; run `npm run build` in the taskplane folder first');
    process.exit(1);
  }
  throw err;
}
