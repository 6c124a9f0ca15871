package consumer

import (
	"reflect"
	"testing"

	"github.com/handoff-dev/handoff/store/chconfig"
)

func TestQuerySettings(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cluster    string
		logQueries bool
		want       map[string]any
	}{
		{name: "one server", want: nil},
		{name: "one server, logged", logQueries: true, want: map[string]any{"log_queries": 1}},
		{name: "cluster", cluster: "prod", want: map[string]any{"insert_distributed_sync": 1}},
		{name: "cluster, logged", cluster: "prod", logQueries: true, want: map[string]any{"insert_distributed_sync": 1, "log_queries": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{ClickHouse: chconfig.Service{Cluster: tc.cluster}, LogQueries: tc.logQueries}
			if got := c.querySettings(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("settings %v, want %v", got, tc.want)
			}
			// The layout's own settings are not changed.
			if got := c.Layout().InsertSettings()["log_queries"]; got != nil {
				t.Errorf("the layout's insert settings gained log_queries=%v", got)
			}
		})
	}
}
