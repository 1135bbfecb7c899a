import { pause, waitUntil, type Fault } from './fault';
import { DEFAULT_DISK_FREE_LIMIT, DEFAULT_MEMORY_WATERMARK, rabbitmq } from './system-services';

const ALARM_TIMEOUT_MS = 60_000;

/**
 * The broker closes the app's connections, as `rabbitmqctl close_all_connections` does, but only the app's (by
 * connection name), so that other users of a shared broker are left alone.
 */
export function closeConnectionsFault(): Fault {
  return {
    name: 'close-connections',
    description: "the broker closes the app's connections (rabbitmqctl close_connection)",
    machineWide: false,
    async inject(context) {
      const closed = await rabbitmq.closeConnectionsNamed(
        context.environment.names.connectionName,
        'fault matrix: connection closed',
      );
      if (closed === 0) throw new Error(`no connection named ${context.environment.names.connectionName}*`);
      context.note(`${closed} connection(s) closed`);
    },
  };
}

/** `rabbitmqctl stop_app` for `ms`, then `start_app`. */
export function brokerStopFault(ms: number): Fault {
  return {
    name: `broker-stop-${ms / 1000}s`,
    description: `the broker stopped (rabbitmqctl stop_app) for ${ms / 1000} s, then start_app`,
    machineWide: true,
    async inject(context) {
      try {
        await rabbitmq.stopApp();
        await pause(ms, context.signal);
      } finally {
        await rabbitmq.startApp();
      }
    },
  };
}

/** A memory alarm: the watermark set near zero for `ms`, then restored. Publishers are blocked meanwhile. */
export function memoryAlarmFault(ms: number): Fault {
  return {
    name: 'memory-alarm',
    description: `a memory alarm (vm_memory_high_watermark 0.000001) for ${ms / 1000} s, then ${DEFAULT_MEMORY_WATERMARK}`,
    machineWide: true,
    async inject(context) {
      try {
        await rabbitmq.setMemoryWatermark('0.000001');
        await waitUntil(
          'the memory alarm',
          async () => (await rabbitmq.alarms()).includes('memory'),
          ALARM_TIMEOUT_MS,
          context.signal,
        );
        await pause(ms, context.signal);
      } finally {
        await rabbitmq.setMemoryWatermark(DEFAULT_MEMORY_WATERMARK);
        await waitUntil(
          'the memory alarm clearing',
          async () => !(await rabbitmq.alarms()).includes('memory'),
          ALARM_TIMEOUT_MS,
          new AbortController().signal,
        );
      }
    },
  };
}

/** A disk alarm: the free-disk limit set 10 GB above the free space for `ms`, then restored. */
export function diskAlarmFault(ms: number): Fault {
  return {
    name: 'disk-alarm',
    description: `a disk alarm (disk_free_limit above the free space) for ${ms / 1000} s, then ${DEFAULT_DISK_FREE_LIMIT}`,
    machineWide: true,
    async inject(context) {
      try {
        const free = await rabbitmq.diskFreeBytes();
        await rabbitmq.setDiskFreeLimit(String(free + 10 * 1024 ** 3));
        await waitUntil(
          'the disk alarm',
          async () => (await rabbitmq.alarms()).includes('disk'),
          ALARM_TIMEOUT_MS,
          context.signal,
        );
        await pause(ms, context.signal);
      } finally {
        await rabbitmq.setDiskFreeLimit(DEFAULT_DISK_FREE_LIMIT);
        await waitUntil(
          'the disk alarm clearing',
          async () => !(await rabbitmq.alarms()).includes('disk'),
          ALARM_TIMEOUT_MS,
          new AbortController().signal,
        );
      }
    },
  };
}
