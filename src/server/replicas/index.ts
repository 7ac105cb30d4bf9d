export { ReplicaRegistry, listReplicas, type ReplicaInfo, type ReplicaRegistryOptions, type StopOptions } from './replica-registry.js';
