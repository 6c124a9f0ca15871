package report_test

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/report"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// seedCase holds the events of deploy/demo/seed-case.jsonl: batch 20260929
// delivered normally, and 20260930 whose job says SUCCESS while the
// consumer has received nothing.
const seedCase = `{"spec":"handoff/v1","event_id":"abs-20260929-01","type":"job.started","time":"2026-09-29T17:00:00.000Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-29","batch_id":"20260929","system":"producer","component":"build-runner-3","attempt":1}
{"spec":"handoff/v1","event_id":"abs-20260929-02","type":"artifact.staged","time":"2026-09-29T17:12:10.250Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-29","batch_id":"20260929","system":"producer","component":"build-runner-3","object":"account_balance_snapshot_20260929.csv.tmp"}
{"spec":"handoff/v1","event_id":"abs-20260929-03","type":"artifact.finalized","time":"2026-09-29T17:14:02.480Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-29","batch_id":"20260929","system":"producer","component":"build-runner-3","object":"account_balance_snapshot_20260929.csv","rows":120118,"bytes":9861234,"checksum":"sha256:4be1c07d"}
{"spec":"handoff/v1","event_id":"abs-20260929-04","type":"job.succeeded","time":"2026-09-29T17:14:05.010Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-29","batch_id":"20260929","system":"producer","component":"build-runner-3","attempt":1}
{"spec":"handoff/v1","event_id":"abs-20260929-05","type":"signal.published","time":"2026-09-29T17:14:06.300Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-29","batch_id":"20260929","system":"producer","component":"build-runner-3","object":"account_balance_snapshot_20260929.flag","rows":120118,"checksum":"sha256:4be1c07d"}
{"spec":"handoff/v1","event_id":"abs-20260929-06","type":"artifact.transferred","time":"2026-09-29T17:20:05.120Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-29","batch_id":"20260929","system":"exchange","component":"sftp-relay-2","object":"account_balance_snapshot_20260929.csv","bytes":9861234,"checksum":"sha256:4be1c07d","attrs":{"location":"/inbox/finance"}}
{"spec":"handoff/v1","event_id":"abs-20260929-07","type":"signal.transferred","time":"2026-09-29T17:20:07.900Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-29","batch_id":"20260929","system":"exchange","component":"sftp-relay-2","object":"account_balance_snapshot_20260929.flag","attrs":{"location":"/inbox/finance"}}
{"spec":"handoff/v1","event_id":"abs-20260929-08","type":"batch.identified","time":"2026-09-29T17:25:00.000Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-29","batch_id":"20260929","system":"consumer","component":"consume-runner-1"}
{"spec":"handoff/v1","event_id":"abs-20260929-09","type":"consume.started","time":"2026-09-29T17:25:00.500Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-29","batch_id":"20260929","system":"consumer","component":"consume-runner-1","attempt":1}
{"spec":"handoff/v1","event_id":"abs-20260929-10","type":"consume.succeeded","time":"2026-09-29T17:31:40.750Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-29","batch_id":"20260929","system":"consumer","component":"consume-runner-1","rows":120118,"attempt":1}
{"spec":"handoff/v1","event_id":"abs-20260930-01","type":"job.started","time":"2026-09-30T17:00:00.000Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-30","batch_id":"20260930","system":"producer","component":"build-runner-3","attempt":1}
{"spec":"handoff/v1","event_id":"abs-20260930-02","type":"artifact.staged","time":"2026-09-30T17:12:10.250Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-30","batch_id":"20260930","system":"producer","component":"build-runner-3","object":"account_balance_snapshot_20260930.csv.tmp"}
{"spec":"handoff/v1","event_id":"abs-20260930-03","type":"artifact.finalized","time":"2026-09-30T17:14:02.480Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-30","batch_id":"20260930","system":"producer","component":"build-runner-3","object":"account_balance_snapshot_20260930.csv","rows":120345,"bytes":9876543,"checksum":"sha256:9f2c5a11"}
{"spec":"handoff/v1","event_id":"abs-20260930-04","type":"job.succeeded","time":"2026-09-30T17:14:05.010Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-30","batch_id":"20260930","system":"producer","component":"build-runner-3","attempt":1}
{"spec":"handoff/v1","event_id":"abs-20260930-05","type":"signal.published","time":"2026-09-30T17:14:06.300Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-30","batch_id":"20260930","system":"producer","component":"build-runner-3","object":"account_balance_snapshot_20260930.flag","rows":120345,"checksum":"sha256:9f2c5a11"}
{"spec":"handoff/v1","event_id":"abs-20260930-06","type":"artifact.transferred","time":"2026-09-30T17:20:05.120Z","pipeline":"account-balance-snapshot.daily","business_date":"2026-09-30","batch_id":"20260930","system":"exchange","component":"sftp-relay-2","object":"account_balance_snapshot_20260930.csv","bytes":9876543,"checksum":"sha256:9f2c5a11","attrs":{"location":"/inbox/finance"}}
{"spec":"handoff/v1","event_id":"abs-hb-20261001-0300","type":"process.heartbeat","time":"2026-10-01T03:00:00.000Z","pipeline":"account-balance-snapshot.daily","system":"consumer","component":"consume-runner-1"}`

// seedContract is deploy/contracts/account-balance-snapshot.daily.yaml
// without its comments.
const seedContractYAML = `
pipeline: account-balance-snapshot.daily
schedule: daily
timezone: Asia/Shanghai
batch_id: "{yyyymmdd}"
artifact: "account_balance_snapshot_{batch_id}.csv"
signal: "account_balance_snapshot_{batch_id}.flag"
deadlines:
  produced: "business_date + 1d 02:00"
  finalized: "+30m"
  signaled: "+15m"
  transferred: "business_date + 1d 04:00"
  signal_delivered: "business_date + 1d 06:00"
  identified: "+30m"
  consumed: "business_date + 1d 07:00"
rows:
  min: 1
`

// The seed case of docs/seed-case.md, as of 2026-10-03: the report of batch
// 20260930 locates the break at the missing completion signal, excludes
// production and transfer with evidence, and plans the signal's restore.
func ExampleText() {
	c, err := contract.Parse("account-balance-snapshot.daily.yaml", []byte(seedContractYAML))
	if err != nil {
		fmt.Println(err)
		return
	}
	contracts, err := contract.NewSet(c)
	if err != nil {
		fmt.Println(err)
		return
	}
	// A batches.Set gives the replay what one batch cannot know alone: the
	// previous batch (continuity) and the consumer's heartbeat.
	set := batches.New(contracts, time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC))
	var dec model.Decoder
	for _, line := range strings.Split(seedCase, "\n") {
		e, err := dec.Decode([]byte(line))
		if err != nil {
			fmt.Println(err)
			return
		}
		set.Add(&e)
	}
	key, _ := model.ParseBatchKey("account-balance-snapshot.daily/2026-09-30/20260930")
	d, _ := set.DiagnoseOne(key)
	if err := report.Text(os.Stdout, &d); err != nil {
		fmt.Println(err)
	}
	// Output:
	// BATCH account-balance-snapshot.daily/2026-09-30/20260930
	//   as of 2026-10-03 00:00 UTC (08:00 Asia/Shanghai); contract
	//   account-balance-snapshot.daily.yaml; 6 events, 2026-09-30T17:00:00.000Z to
	//   2026-09-30T17:20:05.120Z
	//
	// SYMPTOM
	//   batch account-balance-snapshot.daily/2026-09-30/20260930: status LATE -- verdict
	//   not_identified; the job says SUCCESS, the delivery does not.
	//   First missing boundary: signal_delivered, due 2026-09-30 22:00 UTC (06:00 Asia/Shanghai, next
	//   day), overdue by 2d 2h 0m.
	//
	// CHAIN  (✓ proven, ✗ missing, - not required by the contract)
	//   ✓ produced          2026-09-30 17:14:05.010 UTC (01:14:05.010 Asia/Shanghai, next day)
	//       due 2026-09-30 18:00 UTC (02:00 Asia/Shanghai, next day); evidence abs-20260930-04
	//   ✓ finalized         2026-09-30 17:14:02.480 UTC (01:14:02.480 Asia/Shanghai, next day)
	//       due 2026-09-30 17:44:05.010 UTC (01:44:05.010 Asia/Shanghai, next day); evidence
	//       abs-20260930-03
	//   ✓ signaled          2026-09-30 17:14:06.300 UTC (01:14:06.300 Asia/Shanghai, next day)
	//       due 2026-09-30 17:29:02.480 UTC (01:29:02.480 Asia/Shanghai, next day); evidence
	//       abs-20260930-05
	//   ✓ transferred       2026-09-30 17:20:05.120 UTC (01:20:05.120 Asia/Shanghai, next day)
	//       due 2026-09-30 20:00 UTC (04:00 Asia/Shanghai, next day); evidence abs-20260930-06
	//   ✗ signal_delivered  missing  <- first missing
	//       due 2026-09-30 22:00 UTC (06:00 Asia/Shanghai, next day); overdue by 2d 2h 0m
	//   ✗ identified        missing
	//       due 2026-09-30 22:30 UTC (06:30 Asia/Shanghai, next day); overdue by 2d 1h 30m
	//   ✗ consumed          missing
	//       due 2026-09-30 23:00 UTC (07:00 Asia/Shanghai, next day); overdue by 2d 1h 0m
	//
	// EVIDENCE
	//   producer
	//     - 2026-09-30T17:00:00.000Z job started (by build-runner-3, attempt 1) [abs-20260930-01]
	//     - 2026-09-30T17:12:10.250Z temporary file "account_balance_snapshot_20260930.csv.tmp"
	//       written (by build-runner-3) [abs-20260930-02]
	//     - 2026-09-30T17:14:02.480Z final file "account_balance_snapshot_20260930.csv" in place
	//       (120345 rows, 9876543 bytes, sha256:9f2c5a11, by build-runner-3) [abs-20260930-03]
	//     - 2026-09-30T17:14:05.010Z job reported SUCCESS (by build-runner-3, attempt 1)
	//       [abs-20260930-04]
	//     - 2026-09-30T17:14:06.300Z completion signal "account_balance_snapshot_20260930.flag"
	//       published at the source (120345 rows, sha256:9f2c5a11, by build-runner-3)
	//       [abs-20260930-05]
	//   exchange
	//     - 2026-09-30T17:20:05.120Z data file "account_balance_snapshot_20260930.csv" present and
	//       readable at the receiver (9876543 bytes, sha256:9f2c5a11, by sftp-relay-2)
	//       [abs-20260930-06]
	//     - the completion signal "account_balance_snapshot_20260930.flag" does not exist on the
	//       receiving side: the consumer's trigger condition is not met
	//   consumer
	//     - process "consume-runner-1" is alive: last heartbeat 2026-10-01T03:00:00.000Z (alive is not
	//       the same as having handled this batch) [abs-hb-20261001-0300]
	//     - previous batch account-balance-snapshot.daily/2026-09-29/20260929 was delivered normally
	//     - the receiver has not identified this batch by business_date + batch_id
	//     - no consume attempt recorded for this batch, and no failure record: that is an absence of
	//       evidence, not proof that the consumer is fine
	//
	// HYPOTHESES
	//   not_produced      excluded     excluded by proof of produced, finalized, transferred
	//                                  [abs-20260930-04, abs-20260930-03, abs-20260930-06]
	//   not_final         excluded     excluded by proof of finalized, transferred [abs-20260930-03,
	//                                  abs-20260930-06]
	//   not_transferred   excluded     excluded by proof of transferred [abs-20260930-06]
	//   not_identified    supported    the data file is at the receiver but the receiver has not
	//                                  identified the batch [abs-20260930-06]
	//   not_consumed      no_evidence  downstream of not_identified: no evidence either way
	//
	// ANOMALIES
	//   - late: signal_delivered missing 2d 2h 0m after its deadline 2026-09-30T22:00:00.000Z
	//     (business_date + 1d 06:00)
	//
	// LOCATED BREAK
	//   The delivery stopped at not_identified (transferred but not identified: the data file is at
	//   the receiver, but the receiver has not recognised the batch by business_date + batch_id). The
	//   first missing boundary is signal_delivered: the completion signal does not exist on the
	//   receiving side, so the consumer's trigger condition is not met. The signal expected from
	//   business_date + batch_id is account_balance_snapshot_20260930.flag; no such signal is recorded
	//   on the receiving side. Excluded by evidence: not_produced, not_final, not_transferred (the
	//   chain is proven up to transferred). For not_identified: the data file is at the receiver but
	//   the receiver has not identified the batch [abs-20260930-06]. Downstream, not_consumed can be
	//   neither excluded nor supported until the break is closed.
	//
	// CAVEATS
	//   - No attempt recorded is not a consumer failure: the consumer shows no execution attempt and
	//     no failure record for this batch. That is an absence of evidence, not proof that the
	//     consumer is fine, and not proof that it failed.
	//   - A heartbeat is not proof a batch was handled: it shows a process is alive, not that it saw,
	//     identified or consumed this batch.
	//
	// NEXT STEP
	//   restore_signal: the artifact is proven safe: restore the completion signal
	//   "account_balance_snapshot_20260930.flag" (derived from 2026-09-30/20260930) idempotently
	//   (write then rename, record signal.restored), then verify end to end that the consumer consumed
	//   it exactly once
	//   Before acting, every check must pass:
	//     [pass] artifact_final: final name in place at the source [abs-20260930-03]
	//     [pass] artifact_readable_at_receiver: data file present and readable at the receiver
	//            [abs-20260930-06]
	//     [pass] identity_matches: object names derive from 2026-09-30/20260930 [abs-20260930-03,
	//            abs-20260930-06]
	//     [pass] rows_valid: row counts agree: artifact.finalized 120345, signal.published 120345
	//            [abs-20260930-03, abs-20260930-05]
	//     [pass] checksum_unchanged: checksum and size unchanged across the transfer [abs-20260930-03,
	//            abs-20260930-06]
	//     [pass] no_signal_present: no completion signal recorded at the receiver
	//   Signal name derived from the batch identity: account_balance_snapshot_20260930.flag
}
