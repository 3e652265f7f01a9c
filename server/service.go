package server

import (
	"context"
	"time"

	"github.com/testdbd/testdbd"
	testdbv1 "github.com/testdbd/testdbd/api/testdb/v1"
	"github.com/testdbd/testdbd/lease"
	"github.com/testdbd/testdbd/migrations"
	"github.com/testdbd/testdbd/templates"
)

// Service implements the v1 API over the daemon's parts.
type Service struct {
	testdbv1.UnimplementedTestDBServiceServer
	Manager *lease.Manager
	// DefaultStrategy is the strategy of leases whose request names none.
	DefaultStrategy testdbd.Strategy
}

var _ testdbv1.TestDBServiceServer = (*Service)(nil)

// ListInstances describes every running server, with the settings read back
// from it at start and its memory and databases read now.
func (s *Service) ListInstances(ctx context.Context, _ *testdbv1.ListInstancesRequest) (*testdbv1.ListInstancesResponse, error) {
	resp := &testdbv1.ListInstancesResponse{Instances: []*testdbv1.Instance{}}
	for _, info := range s.Manager.Instances(ctx) {
		resp.Instances = append(resp.Instances, instanceToProto(info.InstanceInfo, info.Databases, info.DatadirSize))
	}
	return resp, nil
}

// EnsureTemplate builds or finds a template.
func (s *Service) EnsureTemplate(ctx context.Context, req *testdbv1.EnsureTemplateRequest) (*testdbv1.EnsureTemplateResponse, error) {
	files := make([]migrations.File, len(req.Migrations))
	for i, f := range req.Migrations {
		files[i] = migrations.File{Name: f.Name, Content: []byte(f.Content)}
		f.Content = "" // the request's copy can be collected while the build runs
	}
	info, err := s.Manager.EnsureTemplate(ctx, templates.Request{
		Name: req.Name, MigrationsDir: req.MigrationsDir, Files: files, Seed: req.SeedSql,
		Engine: req.Engine, Async: req.Async, PoolSize: int(req.PoolSize),
		BuildTimeout: time.Duration(req.BuildTimeoutSeconds) * time.Second,
	})
	if err != nil {
		return nil, toStatus(err)
	}
	return &testdbv1.EnsureTemplateResponse{Template: templateToProto(info)}, nil
}

// GetTemplate returns one template.
func (s *Service) GetTemplate(_ context.Context, req *testdbv1.GetTemplateRequest) (*testdbv1.GetTemplateResponse, error) {
	info, err := s.Manager.GetTemplate(req.Name, req.Hash)
	if err != nil {
		return nil, toStatus(err)
	}
	return &testdbv1.GetTemplateResponse{Template: templateToProto(info)}, nil
}

// watchInterval is how often WatchTemplate looks at the build.
const watchInterval = 100 * time.Millisecond

// WatchTemplate streams a build's progress until it ends.
func (s *Service) WatchTemplate(req *testdbv1.WatchTemplateRequest, stream testdbv1.TestDBService_WatchTemplateServer) error {
	var last *testdbv1.Template
	tick := time.NewTicker(watchInterval)
	defer tick.Stop()
	for {
		info, err := s.Manager.GetTemplate(req.Name, req.Hash)
		if err != nil {
			return toStatus(err)
		}
		t := templateToProto(info)
		if last == nil || !sameProgress(last, t) {
			if err := stream.Send(&testdbv1.WatchTemplateResponse{Template: t}); err != nil {
				return err
			}
			last = t
		}
		if info.State != templates.Building && info.Progress.Phase != templates.PhaseCloning {
			return nil // READY (its first worker database made) or FAILED
		}
		select {
		case <-stream.Context().Done():
			return stream.Context().Err()
		case <-tick.C:
		}
		if req.Hash == "" {
			// Follow the build being watched, not whatever the name
			// points at next.
			req.Hash = info.Hash
		}
	}
}

// sameProgress reports whether two readings of a build say the same, but
// for the time elapsed.
func sameProgress(a, b *testdbv1.Template) bool {
	pa, pb := a.GetProgress(), b.GetProgress()
	return a.State == b.State && pa.GetPhase() == pb.GetPhase() && pa.GetStep() == pb.GetStep() && pa.GetMigration() == pb.GetMigration()
}

// ListTemplates lists the templates.
func (s *Service) ListTemplates(context.Context, *testdbv1.ListTemplatesRequest) (*testdbv1.ListTemplatesResponse, error) {
	resp := &testdbv1.ListTemplatesResponse{Templates: []*testdbv1.Template{}}
	for _, t := range s.Manager.ListTemplates() {
		resp.Templates = append(resp.Templates, templateToProto(t))
	}
	return resp, nil
}

// DeleteTemplate drops a template.
func (s *Service) DeleteTemplate(ctx context.Context, req *testdbv1.DeleteTemplateRequest) (*testdbv1.DeleteTemplateResponse, error) {
	info, err := s.Manager.DeleteTemplate(ctx, req.Name, req.Force)
	if err != nil {
		return nil, toStatus(err)
	}
	return &testdbv1.DeleteTemplateResponse{Template: templateToProto(info)}, nil
}

// AcquireLease leases a worker database.
func (s *Service) AcquireLease(ctx context.Context, req *testdbv1.AcquireLeaseRequest) (*testdbv1.AcquireLeaseResponse, error) {
	st, err := strategyFromProto(req.Strategy)
	if err != nil {
		return nil, toStatus(err)
	}
	if st == testdbd.StrategyUnspecified {
		st = s.DefaultStrategy
	}
	if req.TtlSeconds < 0 || req.WaitTimeoutMs < 0 {
		return nil, toStatus(testdbd.Errorf(testdbd.EInvalid, "ttl_seconds and wait_timeout_ms must not be negative"))
	}
	info, err := s.Manager.Acquire(ctx, lease.AcquireRequest{
		Template: req.Template, TemplateHash: req.TemplateHash, Strategy: st, Worker: req.Worker,
		TTL: time.Duration(req.TtlSeconds) * time.Second, WaitTimeout: time.Duration(req.WaitTimeoutMs) * time.Millisecond,
		MaxConnections: int(req.MaxConnections), KeepAutoIncrement: req.KeepAutoIncrement,
	})
	if err != nil {
		return nil, toStatus(err)
	}
	return &testdbv1.AcquireLeaseResponse{Lease: leaseToProto(info)}, nil
}

// GetLease returns one lease.
func (s *Service) GetLease(_ context.Context, req *testdbv1.GetLeaseRequest) (*testdbv1.GetLeaseResponse, error) {
	info, err := s.Manager.Get(req.Id)
	if err != nil {
		return nil, toStatus(err)
	}
	return &testdbv1.GetLeaseResponse{Lease: leaseToProto(info)}, nil
}

// ListLeases lists the active leases.
func (s *Service) ListLeases(_ context.Context, req *testdbv1.ListLeasesRequest) (*testdbv1.ListLeasesResponse, error) {
	resp := &testdbv1.ListLeasesResponse{Leases: []*testdbv1.Lease{}}
	for _, l := range s.Manager.List(req.Template) {
		resp.Leases = append(resp.Leases, leaseToProto(l))
	}
	return resp, nil
}

// RenewLease extends a lease.
func (s *Service) RenewLease(_ context.Context, req *testdbv1.RenewLeaseRequest) (*testdbv1.RenewLeaseResponse, error) {
	if req.TtlSeconds < 0 {
		return nil, toStatus(testdbd.Errorf(testdbd.EInvalid, "ttl_seconds must not be negative"))
	}
	info, err := s.Manager.Renew(req.Id, time.Duration(req.TtlSeconds)*time.Second)
	if err != nil {
		return nil, toStatus(err)
	}
	return &testdbv1.RenewLeaseResponse{Lease: leaseToProto(info)}, nil
}

// ResetLease resets a leased database now.
func (s *Service) ResetLease(ctx context.Context, req *testdbv1.ResetLeaseRequest) (*testdbv1.ResetLeaseResponse, error) {
	st, err := strategyFromProto(req.Strategy)
	if err != nil {
		return nil, toStatus(err)
	}
	rep, err := s.Manager.Reset(ctx, req.Id, st)
	if err != nil {
		return nil, toStatus(err)
	}
	return &testdbv1.ResetLeaseResponse{Report: reportToProto(rep)}, nil
}

// ReleaseLease gives a lease back.
func (s *Service) ReleaseLease(_ context.Context, req *testdbv1.ReleaseLeaseRequest) (*testdbv1.ReleaseLeaseResponse, error) {
	info, err := s.Manager.Release(req.Id)
	if err != nil {
		return nil, toStatus(err)
	}
	return &testdbv1.ReleaseLeaseResponse{Lease: leaseToProto(info)}, nil
}

// GetStats returns counters and latency percentiles.
func (s *Service) GetStats(context.Context, *testdbv1.GetStatsRequest) (*testdbv1.GetStatsResponse, error) {
	return statsToProto(s.Manager.Stats()), nil
}

// ListEvents returns the recent resets and the recent errors and warnings.
func (s *Service) ListEvents(_ context.Context, req *testdbv1.ListEventsRequest) (*testdbv1.ListEventsResponse, error) {
	limit := int(req.Limit)
	if limit < 0 {
		return nil, toStatus(testdbd.Errorf(testdbd.EInvalid, "limit %d must not be negative", limit))
	}
	if limit == 0 {
		limit = 50
	}
	resets, events := s.Manager.Events(limit, req.AfterSeq)
	out := &testdbv1.ListEventsResponse{Resets: []*testdbv1.ResetEvent{}, Events: []*testdbv1.Event{}}
	for _, r := range resets {
		out.Resets = append(out.Resets, &testdbv1.ResetEvent{Seq: r.Seq, At: ts(r.At), Template: r.Template,
			InstanceId: r.InstanceID, Trigger: r.Trigger, Report: reportToProto(r.Report), Error: r.Err})
	}
	for _, e := range events {
		out.Events = append(out.Events, &testdbv1.Event{Seq: e.Seq, At: ts(e.At), Level: e.Level, Kind: e.Kind,
			Message: e.Message, Template: e.Template, LeaseId: e.LeaseID, InstanceId: e.InstanceID, Database: e.Database})
	}
	return out, nil
}

// BeginTemplateBuild starts an external build.
func (s *Service) BeginTemplateBuild(ctx context.Context, req *testdbv1.BeginTemplateBuildRequest) (*testdbv1.BeginTemplateBuildResponse, error) {
	if req.PoolSize < 0 || req.TtlSeconds < 0 {
		return nil, toStatus(testdbd.Errorf(testdbd.EInvalid, "pool_size and ttl_seconds must not be negative"))
	}
	info, b, err := s.Manager.BeginExternal(ctx, templates.ExternalRequest{
		Name: req.Name, ContentHash: req.ContentHash, Engine: req.Engine, PoolSize: int(req.PoolSize),
		TTL: time.Duration(req.TtlSeconds) * time.Second,
	})
	if err != nil {
		return nil, toStatus(err)
	}
	resp := &testdbv1.BeginTemplateBuildResponse{Template: templateToProto(info)}
	if b != nil {
		resp.Build = &testdbv1.ExternalBuild{Database: b.Database, Host: b.Host, Port: int32(b.Port), User: b.User,
			Password: b.Password, Dsn: b.DSN, Url: b.URL, ExpiresAt: ts(b.ExpiresAt), CaCert: b.CACert}
	}
	return resp, nil
}

// FinishTemplateBuild ends an external build with a template.
func (s *Service) FinishTemplateBuild(ctx context.Context, req *testdbv1.FinishTemplateBuildRequest) (*testdbv1.FinishTemplateBuildResponse, error) {
	info, err := s.Manager.FinishExternal(ctx, req.Name, req.Hash, req.Async)
	if err != nil {
		return nil, toStatus(err)
	}
	return &testdbv1.FinishTemplateBuildResponse{Template: templateToProto(info)}, nil
}

// AbortTemplateBuild ends an external build without one.
func (s *Service) AbortTemplateBuild(ctx context.Context, req *testdbv1.AbortTemplateBuildRequest) (*testdbv1.AbortTemplateBuildResponse, error) {
	if len(req.Reason) > 4096 {
		req.Reason = req.Reason[:4096]
	}
	info, err := s.Manager.AbortExternal(ctx, req.Name, req.Hash, req.Reason)
	if err != nil {
		return nil, toStatus(err)
	}
	return &testdbv1.AbortTemplateBuildResponse{Template: templateToProto(info)}, nil
}
