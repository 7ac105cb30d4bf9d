/**
 * Who may sign in. A user is allowed when their subject is listed, or when their email is listed
 * or is in a listed domain (then, with `requireVerifiedEmail`, only if the issuer says
 * `email_verified: true`). With all three lists empty everyone the issuer authenticates may sign
 * in (as Headscale does); signing in grants nothing by itself: access comes from memberships.
 */
export interface SignInPolicy {
  /** Email addresses, compared case-insensitively. */
  readonly emails: readonly string[];
  /** Email domains (`example.com`, no `@`), compared case-insensitively; subdomains do not match. */
  readonly domains: readonly string[];
  /** Subjects (`sub`) of the configured issuer, compared exactly. */
  readonly subjects: readonly string[];
  /** Email and domain rules accept only verified emails. Default true. */
  readonly requireVerifiedEmail: boolean;
}

/** Why the policy refused a user. */
export type SignInRefusalReason =
  /** Only subjects are listed, and this one is not. */
  | 'subject_not_allowed'
  /** Email rules exist, and the issuer sent no email (the `email` scope, or UserInfo, may be missing). */
  | 'email_missing'
  /** The email is not listed and not in a listed domain. */
  | 'email_not_allowed'
  /** The email matches a rule but the issuer does not say it is verified. */
  | 'email_not_verified';

export interface SignInRefusal {
  readonly reason: SignInRefusalReason;
  /** For people: names the subject or email. */
  readonly message: string;
}

/** What the policy decided; `matchedBy` names the rule that allowed. */
export type SignInDecision =
  | { readonly allowed: true; readonly matchedBy: 'anyone' | 'subject' | 'email' | 'domain' }
  | ({ readonly allowed: false } & SignInRefusal);

/** The identity facts the policy looks at. */
export interface SignInFacts {
  readonly subject: string;
  readonly email: string | undefined;
  readonly emailVerified: boolean;
}

/** A policy from configuration: trims, lower-cases emails and domains, drops a leading `@` of a domain. */
export function makeSignInPolicy(input: Partial<SignInPolicy> = {}): SignInPolicy {
  const clean = (list: readonly string[] | undefined, lower: boolean): string[] =>
    (list ?? []).map((v) => (lower ? v.trim().toLowerCase() : v.trim())).filter((v) => v !== '');
  return {
    emails: clean(input.emails, true),
    domains: clean(input.domains, true).map((d) => d.replace(/^@/, '')),
    subjects: clean(input.subjects, false),
    requireVerifiedEmail: input.requireVerifiedEmail ?? true,
  };
}

/** Applies `policy` to a verified identity. Never throws. */
export function checkSignIn(facts: SignInFacts, policy: SignInPolicy): SignInDecision {
  const emailRules = policy.emails.length > 0 || policy.domains.length > 0;
  if (!emailRules && policy.subjects.length === 0) return { allowed: true, matchedBy: 'anyone' };
  if (policy.subjects.includes(facts.subject)) return { allowed: true, matchedBy: 'subject' };
  if (!emailRules) {
    return { allowed: false, reason: 'subject_not_allowed', message: `subject ${JSON.stringify(facts.subject)} may not sign in` };
  }
  if (facts.email === undefined || facts.email === '') {
    return { allowed: false, reason: 'email_missing', message: `the issuer sent no email for subject ${JSON.stringify(facts.subject)}, and sign-in is limited by email` };
  }
  const email = facts.email.trim().toLowerCase();
  const at = email.lastIndexOf('@');
  const domain = at > 0 ? email.slice(at + 1) : undefined;
  const matchedBy = policy.emails.includes(email) ? 'email' : domain !== undefined && policy.domains.includes(domain) ? 'domain' : undefined;
  if (matchedBy === undefined) {
    return { allowed: false, reason: 'email_not_allowed', message: `${email} may not sign in` };
  }
  if (policy.requireVerifiedEmail && !facts.emailVerified) {
    return { allowed: false, reason: 'email_not_verified', message: `the issuer does not say ${email} is verified` };
  }
  return { allowed: true, matchedBy };
}
