package server

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/testdbd/testdbd"
	testdbv1 "github.com/testdbd/testdbd/api/testdb/v1"
	"github.com/testdbd/testdbd/instance"
)

// ms converts a duration to milliseconds with microsecond precision.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func instanceToProto(i testdbd.InstanceInfo, databases int) *testdbv1.Instance {
	out := &testdbv1.Instance{
		Id: i.ID, Provider: i.Provider, Engine: string(i.Engine.Flavor), Version: i.Engine.Version,
		Host: i.Host, Port: int32(i.Port), Datadir: i.Datadir, DatadirOnTmpfs: i.DatadirOnTmpfs,
		MemoryBytes: i.MemoryBytes, Databases: int32(databases), State: string(i.State),
		StartupMs: ms(i.StartupTime), Socket: i.Socket, Pid: int32(i.PID), Image: i.Image,
		ContainerId: i.ContainerID, DatadirBytes: i.DatadirBytes, Error: i.Err, StartedAt: ts(i.StartedAt),
		Settings: []*testdbv1.Setting{}, SettingsMismatched: instance.Mismatched(i.Settings),
	}
	if out.SettingsMismatched == nil {
		out.SettingsMismatched = []string{}
	}
	for _, s := range i.Settings {
		out.Settings = append(out.Settings, &testdbv1.Setting{Name: s.Name, Requested: s.Requested, Actual: s.Actual, Ok: s.OK})
	}
	return out
}
