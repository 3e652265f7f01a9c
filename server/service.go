package server

import (
	"context"

	testdbv1 "github.com/testdbd/testdbd/api/testdb/v1"
	"github.com/testdbd/testdbd/instance"
)

// Service implements the v1 API over the daemon's parts.
type Service struct {
	testdbv1.UnimplementedTestDBServiceServer
	Fleet *instance.Fleet
}

var _ testdbv1.TestDBServiceServer = (*Service)(nil)

// ListInstances describes every running server, with the settings read back
// from it at start and its memory and databases read now.
func (s *Service) ListInstances(ctx context.Context, _ *testdbv1.ListInstancesRequest) (*testdbv1.ListInstancesResponse, error) {
	resp := &testdbv1.ListInstancesResponse{Instances: []*testdbv1.Instance{}}
	for _, srv := range s.Fleet.Servers() {
		info, dbs := srv.Describe(ctx)
		resp.Instances = append(resp.Instances, instanceToProto(info, dbs))
	}
	return resp, nil
}
