import { cpus, loadavg, release, totalmem, platform } from 'node:os';

/** The machine a result was measured on, recorded with every result file. */
export interface MachineInfo {
  cores: number;
  cpuModel: string;
  memoryBytes: number;
  node: string;
  platform: string;
  kernel: string;
  /**
   * 1-, 5- and 15-minute load averages when the scenario started and ended:
   * other work on the machine shows here, and in the spread of the figures.
   */
  loadAverageAtStart?: number[];
  loadAverageAtEnd?: number[];
}

export function loadAverage(): number[] {
  return loadavg().map((x) => Math.round(x * 100) / 100);
}

export function machineInfo(): MachineInfo {
  const list = cpus();
  return {
    cores: list.length,
    cpuModel: list[0]?.model ?? 'unknown',
    memoryBytes: totalmem(),
    node: process.version,
    platform: platform(),
    kernel: release(),
  };
}
