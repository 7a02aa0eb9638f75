import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium (`apt-get install chromium`; .ci/run installs it when missing). */
export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);
/**
 * Browser tests skip on a developer machine without Chromium (the test name says why), but never in CI:
 * there a missing browser must fail the run rather than pass it with the pages untested.
 */
export const skipBrowserTests = !hasChromium && !process.env.CI;
export const browserSkipReason = skipBrowserTests
  ? ` [skipped: no ${CHROMIUM}; apt-get install chromium]`
  : '';

/**
 * Headless Chromium as this machine runs it: as root (no sandbox), and without the background
 * networking that a closed network refuses many times a second.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
