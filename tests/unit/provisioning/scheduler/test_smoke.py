from scheduler_helpers import fake_labels as fake_labels  # autouse fixture
from scheduler_helpers import pod, solve


def test_one_small_pod_gets_one_nodeclaim_with_cheapest_type_first() -> None:
    results = solve([pod(memory="100M")])
    assert results.pod_errors == {}
    assert len(results.new_nodeclaims) == 1
    assert results.to_json_dict()["nodeClaims"][0]["instanceTypes"][0] == "small-instance-type"
