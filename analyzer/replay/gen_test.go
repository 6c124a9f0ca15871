package replay_test

import (
	"fmt"
	"math/rand/v2"
	"time"
	// The seed contract's deadlines are in Asia/Shanghai: embed the zone
	// database so the tests do not depend on the machine's.
	_ "time/tzdata"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// seedContract is the seed case's contract, built in code so the property
// tests and benchmarks do not depend on the YAML parser.
func seedContract() *contract.Contract {
	c := contract.Default("account-balance-snapshot.daily")
	c.Source = "seed.yaml"
	c.Schedule = contract.Daily
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		// time/tzdata is linked in: this cannot fail, and falling back to
		// UTC would quietly test other deadlines.
		panic("Asia/Shanghai: " + err.Error())
	}
	c.Location = loc
	c.BatchID = contract.MustTemplate("{yyyymmdd}")
	c.Artifact = contract.MustTemplate("account_balance_snapshot_{batch_id}.csv")
	c.Signal = contract.MustTemplate("account_balance_snapshot_{batch_id}.flag")
	c.Deadlines[model.SignalDelivered] = contract.Deadline{Kind: contract.Absolute, Days: 1, TimeOfDay: 6 * time.Hour, Text: "business_date + 1d 06:00"}
	c.Deadlines[model.Finalized] = contract.Deadline{Kind: contract.Relative, After: 30 * time.Minute, Text: "+30m"}
	c.Rows = contract.RowRule{Min: 1, HasMin: true, Equal: true}
	return c
}

// randomBatch returns the events of one batch: the ladder cut at a random
// point, with random context events, failures and the odd contradiction, so
// that every rule of the replay gets exercised across many seeds.
func randomBatch(r *rand.Rand, pipeline string, date model.Date) []model.Event {
	key := model.BatchKey{Pipeline: pipeline, BusinessDate: date, BatchID: date.Compact()}
	if r.IntN(20) == 0 {
		key.BatchID += "x" // identity mismatch under a {yyyymmdd} contract
	}
	base := date.In(time.UTC).Add(17 * time.Hour)
	var out []model.Event
	n := 0
	add := func(t model.EventType, sys model.System, mut func(*model.Event)) {
		n++
		e := model.Event{
			Spec: model.SpecV1, ID: fmt.Sprintf("%s-%02d-%d", key.BatchID, n, r.IntN(1000)), Type: t,
			Time:     base.Add(time.Duration(n)*time.Minute + time.Duration(r.IntN(60000))*time.Millisecond),
			Pipeline: key.Pipeline, BusinessDate: key.BusinessDate, BatchID: key.BatchID,
			System: sys, Component: string(sys) + "-1",
		}
		if mut != nil {
			mut(&e)
		}
		out = append(out, e)
	}
	csv := "account_balance_snapshot_" + key.BatchID + ".csv"
	flag := "account_balance_snapshot_" + key.BatchID + ".flag"
	rows := int64(1000 + r.IntN(5))
	cut := r.IntN(9) // how far up the ladder the batch got
	add(model.JobStarted, model.Producer, func(e *model.Event) { e.Attempt, e.HasAttempt = 1, true })
	if cut == 0 && r.IntN(2) == 0 {
		add(model.JobFailed, model.Producer, func(e *model.Event) { e.Error = "exit 1" })
	}
	add(model.ArtifactStaged, model.Producer, func(e *model.Event) { e.Object = csv + ".tmp" })
	if cut >= 1 {
		add(model.JobSucceeded, model.Producer, nil)
	}
	if cut >= 2 {
		add(model.ArtifactFinalized, model.Producer, func(e *model.Event) {
			e.Object, e.Rows, e.HasRows, e.Checksum = csv, rows, true, "sha256:aa"
		})
	}
	if cut >= 3 && r.IntN(6) != 0 {
		add(model.SignalPublished, model.Producer, func(e *model.Event) { e.Object = flag })
	}
	if cut >= 4 {
		add(model.ArtifactTransferred, model.Exchange, func(e *model.Event) {
			e.Object, e.Checksum = csv, "sha256:aa"
			if r.IntN(15) == 0 {
				e.Checksum = "sha256:bb"
			}
		})
	}
	if cut >= 5 && r.IntN(5) != 0 {
		add(model.SignalTransferred, model.Exchange, func(e *model.Event) { e.Object = flag })
	}
	if cut >= 6 {
		add(model.BatchIdentified, model.Consumer, nil)
	}
	if cut >= 7 {
		add(model.ConsumeStarted, model.Consumer, nil)
		if r.IntN(4) == 0 {
			add(model.ConsumeFailed, model.Consumer, func(e *model.Event) { e.Error = "timeout" })
		}
	}
	if cut >= 8 {
		for k := 0; k < 1+boolInt(r.IntN(12) == 0); k++ {
			add(model.ConsumeSucceeded, model.Consumer, func(e *model.Event) {
				e.Rows, e.HasRows = rows, true
				if r.IntN(15) == 0 {
					e.Rows--
				}
			})
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// deliveredBatch returns a delivered batch as a production pipeline emits
// it: the seven boundary events plus context events (job.started,
// artifact.staged, consume.started), sometimes a heartbeat-free retry.
func deliveredBatch(r *rand.Rand, pipeline string, date model.Date) []model.Event {
	key := model.BatchKey{Pipeline: pipeline, BusinessDate: date, BatchID: date.Compact()}
	base := date.In(time.UTC).Add(17 * time.Hour)
	csv := "account_balance_snapshot_" + key.BatchID + ".csv"
	flag := "account_balance_snapshot_" + key.BatchID + ".flag"
	rows := int64(100000 + r.IntN(50000))
	var out []model.Event
	add := func(t model.EventType, sys model.System, comp string, mut func(*model.Event)) {
		n := len(out) + 1
		e := model.Event{
			Spec: model.SpecV1, ID: fmt.Sprintf("%s-%s-%02d", pipeline, key.BatchID, n), Type: t,
			Time:     base.Add(time.Duration(n)*time.Minute + time.Duration(r.IntN(60000))*time.Millisecond),
			Pipeline: key.Pipeline, BusinessDate: key.BusinessDate, BatchID: key.BatchID,
			System: sys, Component: comp,
		}
		if mut != nil {
			mut(&e)
		}
		out = append(out, e)
	}
	attempt := func(e *model.Event) { e.Attempt, e.HasAttempt = 1, true }
	if r.IntN(4) == 0 { // a failed first attempt, retried
		add(model.JobStarted, model.Producer, "build-runner-3", attempt)
		add(model.JobFailed, model.Producer, "build-runner-3", func(e *model.Event) { e.Error = "exit 137" })
	}
	add(model.JobStarted, model.Producer, "build-runner-3", attempt)
	add(model.ArtifactStaged, model.Producer, "build-runner-3", func(e *model.Event) { e.Object = csv + ".tmp" })
	add(model.ArtifactFinalized, model.Producer, "build-runner-3", func(e *model.Event) {
		e.Object, e.Rows, e.HasRows, e.Bytes, e.HasBytes, e.Checksum = csv, rows, true, rows*80, true, "sha256:9f2c5a11"
	})
	add(model.JobSucceeded, model.Producer, "build-runner-3", attempt)
	add(model.SignalPublished, model.Producer, "build-runner-3", func(e *model.Event) { e.Object, e.Rows, e.HasRows = flag, rows, true })
	add(model.ArtifactTransferred, model.Exchange, "sftp-relay-2", func(e *model.Event) {
		e.Object, e.Bytes, e.HasBytes, e.Checksum = csv, rows*80, true, "sha256:9f2c5a11"
	})
	add(model.SignalTransferred, model.Exchange, "sftp-relay-2", func(e *model.Event) { e.Object = flag })
	add(model.BatchIdentified, model.Consumer, "consume-runner-1", nil)
	add(model.ConsumeStarted, model.Consumer, "consume-runner-1", attempt)
	if r.IntN(5) == 0 {
		add(model.ConsumeFailed, model.Consumer, "consume-runner-1", func(e *model.Event) { e.Error = "lock timeout" })
		add(model.ConsumeStarted, model.Consumer, "consume-runner-1", func(e *model.Event) { e.Attempt, e.HasAttempt = 2, true })
	}
	add(model.ConsumeSucceeded, model.Consumer, "consume-runner-1", func(e *model.Event) { e.Rows, e.HasRows = rows, true })
	return out
}
