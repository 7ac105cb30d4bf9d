/** User login on the server: the issuer client from the settings, cookies, and the catalog answers of identity failures. */
export { loginFromSettings, type LoginService } from './login-service.js';
export { identityAnswer } from './identity-answer.js';
export { cookieValue, sessionCookie, setCookie, setTokenCookie, tokenCookie, type CookieOptions } from './cookies.js';
export { serverOrigin, secureCookies } from './server-origin.js';
