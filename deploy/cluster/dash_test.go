//go:build cluster

package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/query/dash"
)

// TestDashboardsThroughDistributed runs every dashboard query on the
// cluster, through the Distributed tables and the views over them: a query
// that works on one server can be refused on a cluster (an IN subquery
// over a Distributed table is, unless GLOBAL).
func TestDashboardsThroughDistributed(t *testing.T) {
	e := clusterEnv(t)
	r, err := dash.NewRunner(open(t, e.servers[0]), e.db)
	if err != nil {
		t.Fatal(err)
	}
	sample := map[dash.ParamType]string{dash.ParamDate: time.Now().UTC().AddDate(0, 0, -2).Format(time.DateOnly),
		dash.ParamString: "cluster-none", dash.ParamInt: "10", dash.ParamDuration: "24h"}
	for _, q := range dash.Queries() {
		t.Run(q.Name, func(t *testing.T) {
			params := map[string]string{}
			for _, p := range q.Params {
				if p.Required {
					params[p.Name] = sample[p.Type]
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := r.Run(ctx, q.Name, params); err != nil {
				t.Errorf("%s %v through the Distributed tables: %v", q.Name, params, err)
			}
		})
	}
}
