import type { Page } from 'playwright-core';
import { paths } from '../../../src/protocol/index.js';

/**
 * Renames a security group from the security-groups view open in `page`, as
 * an operator does (the tab in front, where Chromium doesn't slow its
 * frames; Edit, the name, Save), and waits for the PATCH's answer.
 * Returns its status and the milliseconds from the click to the answer.
 */
export async function saveGroupName(page: Page, org: string, groupId: string, name: string): Promise<{ status: number; ms: number }> {
  await page.bringToFront();
  await page.getByTestId('sg-edit').first().click();
  await page.getByTestId('sg-name').fill(name);
  const answered = page.waitForResponse((r) => r.request().method() === 'PATCH' && new URL(r.url()).pathname === paths.securityGroup(org, groupId), { timeout: 10_000 });
  const clicked = performance.now();
  await page.getByTestId('sg-save').click();
  const res = await answered;
  return { status: res.status(), ms: Math.round(performance.now() - clicked) };
}
