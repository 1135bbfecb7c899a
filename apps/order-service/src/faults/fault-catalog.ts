import {
  appKillFault,
  relayKillFault,
  SAGA_FLOW_STEPS,
  sagaStepKillFault,
  sigtermFault,
  type SagaFlowStep,
} from './app-process.faults';
import { brokerStopFault, closeConnectionsFault, diskAlarmFault, memoryAlarmFault } from './broker.faults';
import {
  connectionLimitFault,
  postgresRestartFault,
  postgresStopFault,
  terminateBackendsFault,
} from './database.faults';
import { clusterLeaderKillFault } from './cluster.fault';
import type { Fault } from './fault';
import { handlerDeadlineFault, poisonMessageFault } from './message.faults';

/** How hard the faults hit. */
export interface FaultDurations {
  /** SIGKILLs in the app-kill fault. */
  kills: number;
  /** One broker-stop fault per entry, each the outage's length. */
  brokerStopsMs: number[];
  /** How long the memory and disk alarms and the connection limit are held. */
  holdMs: number;
  /** How long PostgreSQL stays stopped. */
  postgresStopMs: number;
  /** Whether fault 14 runs: starting its 3-node cluster takes from half a minute to two. */
  cluster: boolean;
  /** The messages of the order saga's flow after whose step the saga fault kills the app, one kill each. */
  sagaSteps: readonly SagaFlowStep[];
}

/** What the issue asks for: broker stops of 10 and 60 s, PostgreSQL stopped for 60 s. */
export const FULL_DURATIONS: FaultDurations = {
  kills: 3,
  brokerStopsMs: [10_000, 60_000],
  holdMs: 20_000,
  postgresStopMs: 60_000,
  cluster: true,
  sagaSteps: SAGA_FLOW_STEPS,
};

/** `--quick` (and `npm test`): one short cycle of each fault. */
export const QUICK_DURATIONS: FaultDurations = {
  kills: 2,
  brokerStopsMs: [3_000],
  holdMs: 3_000,
  postgresStopMs: 3_000,
  cluster: false,
  // The saga's start and the step in the middle of its flow: each kill is a restart of the app.
  sagaSteps: ['order.placed', 'payment.captured'],
};

/** Every outage held `ms` instead (`--outage <seconds>`), to iterate without long windows. */
export function withOutage(durations: FaultDurations, ms: number): FaultDurations {
  return { ...durations, brokerStopsMs: [ms], holdMs: ms, postgresStopMs: ms };
}

/** The fault matrix, in the order it runs (the numbers are issue 10's). */
export function faultCatalog(durations: FaultDurations): Fault[] {
  return [
    appKillFault(durations.kills), // 1
    relayKillFault(), // 2
    sigtermFault(), // 3
    closeConnectionsFault(), // 4
    ...durations.brokerStopsMs.map(brokerStopFault), // 5
    memoryAlarmFault(durations.holdMs), // 6
    diskAlarmFault(durations.holdMs), // 7
    postgresRestartFault(), // 8
    postgresStopFault(durations.postgresStopMs), // 9
    terminateBackendsFault(), // 10
    connectionLimitFault(durations.holdMs), // 11
    handlerDeadlineFault(), // 12
    poisonMessageFault(), // 13
    ...(durations.cluster ? [clusterLeaderKillFault()] : []), // 14
    sagaStepKillFault(durations.sagaSteps), // the order saga: a kill between two of its flow's steps
  ];
}

/** The faults `--only` names: an exact name, or a prefix such as `broker-stop` or `pg-`; comma-separated. */
export function selectFaults(faults: readonly Fault[], only: string | undefined): Fault[] {
  if (!only) return [...faults];
  const wanted = only
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  const selected = faults.filter((fault) => wanted.some((name) => fault.name.startsWith(name)));
  const unknown = wanted.filter((name) => !faults.some((fault) => fault.name.startsWith(name)));
  if (unknown.length > 0) {
    throw new Error(
      `no fault named ${unknown.join(', ')}; the faults are: ${faults.map((fault) => fault.name).join(', ')}`,
    );
  }
  return selected;
}
