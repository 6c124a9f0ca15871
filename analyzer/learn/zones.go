package learn

import "time"

// DefaultZones returns the time zones the learner chooses from unless
// told otherwise, in order of preference on a tie: UTC first, so that a
// once-a-day pipeline whose arrivals fit any fixed offset keeps UTC. The
// caller loads them (contract.LoadZones): the learner reads no zone
// database itself.
func DefaultZones() []string {
	return []string{
		"UTC", "Europe/London", "Europe/Berlin", "Europe/Moscow", "America/New_York", "America/Chicago",
		"America/Denver", "America/Los_Angeles", "America/Sao_Paulo", "Asia/Kolkata", "Asia/Singapore",
		"Asia/Shanghai", "Asia/Tokyo", "Australia/Sydney", "Pacific/Auckland",
	}
}

// ExpectedAt is what pipeline's history in l says of its batches as of
// asOf: the baselines in force then (BaselineAsOf, the default window),
// nil when they support none. Annotate writes them into a diagnosis.
func (l *Learner) ExpectedAt(pipeline string, asOf time.Time, o Options) *Expected {
	return l.Expect(BaselineAsOf(asOf), 0, o).Of(pipeline)
}
