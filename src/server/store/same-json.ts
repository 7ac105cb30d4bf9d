export { changedFields, sameJson } from '../../util/same-json.js';
