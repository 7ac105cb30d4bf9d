/** `tcp:5432`, `udp:53`, `icmp`. */
export const POLICY_TEST_PORT_PATTERN = `^(?:(?:tcp|udp):[0-9]{1,5}|icmp|icmpv6)$`;
