/**
 * What the agent receives from its server (watch events, lists, answers,
 * tunnel requests), checked against the protocol's schemas before use.
 */
export { accepted, compileCheck, InvalidReceivedError, shownText, type Check, type CheckResult } from './schema-check.js';
export {
  checkDevice,
  checkSecurityGroup,
  checkOrganization,
  checkEnrolledDevice,
  checkOwnRegistrationKey,
  checkTokenRenewal,
  checkRelayList,
  checkNoParams,
  checkRequestFrame,
} from './received-checks.js';
