package server

import (
	"math"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/testdbd/testdbd"
	testdbv1 "github.com/testdbd/testdbd/api/testdb/v1"
	"github.com/testdbd/testdbd/lease"
	"github.com/testdbd/testdbd/stats"
	"github.com/testdbd/testdbd/templates"
)

// ms converts a duration to milliseconds with microsecond precision.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func instanceToProto(i testdbd.InstanceInfo, databases int, datadirSize int64) *testdbv1.Instance {
	out := &testdbv1.Instance{
		Id: i.ID, Provider: i.Provider, Engine: string(i.Engine.Flavor), Version: i.Engine.Version,
		Host: i.Host, Port: int32(i.Port), Datadir: i.Datadir, DatadirOnTmpfs: i.DatadirOnTmpfs,
		MemoryBytes: float64(i.MemoryBytes), Databases: int32(databases), State: string(i.State),
		StartupMs: ms(i.StartupTime), Socket: i.Socket, Pid: int32(i.PID), Image: i.Image,
		ContainerId: i.ContainerID, DatadirBytes: float64(i.DatadirBytes), Error: i.Err, StartedAt: ts(i.StartedAt),
		Settings: []*testdbv1.Setting{}, SettingsMismatched: testdbd.Mismatched(i.Settings), DatadirSizeBytes: float64(datadirSize),
	}
	if out.SettingsMismatched == nil {
		out.SettingsMismatched = []string{}
	}
	for _, s := range i.Settings {
		out.Settings = append(out.Settings, &testdbv1.Setting{Name: s.Name, Requested: s.Requested, Actual: s.Actual, Ok: s.OK})
	}
	return out
}

var templateStates = map[templates.State]testdbv1.TemplateState{
	templates.Building: testdbv1.TemplateState_TEMPLATE_STATE_BUILDING,
	templates.Ready:    testdbv1.TemplateState_TEMPLATE_STATE_READY,
	templates.Failed:   testdbv1.TemplateState_TEMPLATE_STATE_FAILED,
	templates.Degraded: testdbv1.TemplateState_TEMPLATE_STATE_DEGRADED,
}

func templateToProto(t templates.Info) *testdbv1.Template {
	return &testdbv1.Template{
		Name: t.Name, Hash: t.Hash, State: templateStates[t.State], Error: t.Err, InstanceId: t.InstanceID,
		Tables: int32(t.Tables), Version: t.Version, Database: t.Database, Migrations: nonNil(t.Migrations),
		CreatedAt: ts(t.CreatedAt), Engine: t.Engine, Views: int32(t.Views), Triggers: int32(t.Triggers),
		Routines: int32(t.Routines), Events: int32(t.Events), Current: t.Current, Source: t.Source,
		Build: &testdbv1.BuildTimings{ProvisionMs: ms(t.Build.Provision), MigrateMs: ms(t.Build.Migrate),
			SeedMs: ms(t.Build.Seed), CaptureMs: ms(t.Build.Capture), CloneMs: ms(t.Build.Clone), TotalMs: ms(t.Build.Total),
			RestoreMs: ms(t.Build.Restore)},
		Progress: &testdbv1.BuildProgress{Phase: t.Progress.Phase, Step: int32(t.Progress.Step), Steps: int32(t.Progress.Steps),
			Migration: t.Progress.Migration, ElapsedMs: ms(t.Progress.Elapsed)},
		Pool: &testdbv1.PoolCounts{Ready: int32(t.Pool.Ready), Leased: int32(t.Pool.Leased), Resetting: int32(t.Pool.Resetting),
			Creating: int32(t.Pool.Creating), Target: int32(t.Pool.Target)},
	}
}

func leaseToProto(l lease.LeaseInfo) *testdbv1.Lease {
	return &testdbv1.Lease{
		Id: l.ID, Template: l.Template, TemplateHash: l.TemplateHash, Strategy: strategyToProto(l.Strategy),
		Worker: l.Worker, Database: l.Database, Host: l.Host, Port: int32(l.Port), User: l.User, Password: l.Password,
		Dsn: l.DSN, Url: l.URL, ExpiresAt: ts(l.ExpiresAt), AcquiredAt: ts(l.AcquiredAt), InstanceId: l.InstanceID,
		WaitedMs: ms(l.Waited), State: l.State, TtlSeconds: int32(l.TTL / time.Second), Resets: int32(min(l.Resets, math.MaxInt32)),
		MaxConnections: int32(l.MaxConnections), EndedReason: l.EndedReason, KeepAutoIncrement: l.KeepAutoIncrement,
		CaCert: l.CACert,
	}
}

func reportToProto(r testdbd.ResetReport) *testdbv1.ResetReport {
	return &testdbv1.ResetReport{
		LeaseId: r.LeaseID, Database: r.Database, Strategy: strategyToProto(r.Strategy),
		RequestedStrategy: strategyToProto(r.Requested), FallbackReason: r.FallbackReason, TotalMs: ms(r.Total),
		Phases: &testdbv1.ResetPhases{SessionsMs: ms(r.Phases.Sessions), DetectMs: ms(r.Phases.Detect),
			VerifyMs: ms(r.Phases.Verify), RestoreMs: ms(r.Phases.Restore), SchemaMs: ms(r.Phases.Schema)},
		TablesTotal: int32(r.TablesTotal), TablesReset: nonNil(r.TablesReset), TablesDelta: nonNil(r.TablesDelta), DeltaFallback: r.DeltaFallback, SchemaChanges: nonNil(r.SchemaChanges),
		SessionsEnded: int32(r.SessionsEnded), KeepAutoIncrement: r.KeepAutoIncrement, XaRolledBack: nonNil(r.XARolledBack),
	}
}

func latencyToProto(l stats.Latency) *testdbv1.LatencyStats {
	return &testdbv1.LatencyStats{Count: counter(l.Count), P50Ms: ms(l.P50), P90Ms: ms(l.P90), P99Ms: ms(l.P99), MaxMs: ms(l.Max), MeanMs: ms(l.Mean)}
}

func statsToProto(s lease.Stats) *testdbv1.GetStatsResponse {
	out := &testdbv1.GetStatsResponse{
		Acquire: latencyToProto(s.Acquire), AcquireWait: latencyToProto(s.AcquireWait),
		LeasesActive: int32(s.LeasesActive), LeasesAcquired: counter(s.LeasesAcquired), LeasesExpired: counter(s.LeasesExpired),
		AcquireExhausted: counter(s.AcquireExhausted), Instances: int32(s.Instances), Databases: int32(s.Databases),
		Templates: int32(s.Templates), Resets: []*testdbv1.StrategyStats{},
	}
	for _, r := range s.Resets {
		out.Resets = append(out.Resets, &testdbv1.StrategyStats{Strategy: strategyToProto(r.Strategy),
			Latency: latencyToProto(r.Latency), Fallbacks: counter(r.Fallbacks), Failures: counter(r.Failures)})
	}
	return out
}

// counter is a count since the daemon started, as the API's uint32 (a JSON
// number in REST); it stops at the largest value rather than wrap.
func counter(n int64) uint32 { return uint32(min(max(n, 0), math.MaxUint32)) }

func strategyToProto(s testdbd.Strategy) testdbv1.Strategy {
	switch s {
	case testdbd.StrategyTruncate:
		return testdbv1.Strategy_STRATEGY_TRUNCATE
	case testdbd.StrategySnapshot:
		return testdbv1.Strategy_STRATEGY_SNAPSHOT
	case testdbd.StrategyRollback:
		return testdbv1.Strategy_STRATEGY_ROLLBACK
	}
	return testdbv1.Strategy_STRATEGY_UNSPECIFIED
}

func strategyFromProto(s testdbv1.Strategy) (testdbd.Strategy, error) {
	switch s {
	case testdbv1.Strategy_STRATEGY_UNSPECIFIED:
		return testdbd.StrategyUnspecified, nil
	case testdbv1.Strategy_STRATEGY_TRUNCATE:
		return testdbd.StrategyTruncate, nil
	case testdbv1.Strategy_STRATEGY_SNAPSHOT:
		return testdbd.StrategySnapshot, nil
	case testdbv1.Strategy_STRATEGY_ROLLBACK:
		return testdbd.StrategyRollback, nil
	}
	return 0, testdbd.Errorf(testdbd.EInvalid, "unknown strategy %d: use STRATEGY_TRUNCATE, STRATEGY_SNAPSHOT or STRATEGY_ROLLBACK", s)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
