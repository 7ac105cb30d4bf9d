/** The protocols a security group rule may name. */
export const IP_PROTOCOLS = ['tcp', 'udp', 'icmp', 'icmpv6', 'any'] as const;
