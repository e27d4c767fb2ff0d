"""CUDA_DEVICE_ORDER / CUDA_VISIBLE_DEVICES and "physical GPU 2 → cuda:0", on each recorded box."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuitrain.hardware.devices import GpuInfo, discover, no_identity
from tuitrain.hardware.mapping import (
    FASTEST_FIRST,
    PCI_BUS_ID,
    cuda_ordinals,
    describe_ordinals,
    fastest_first_order,
    map_devices,
    pci_order,
    resolve,
)
from tuitrain.hardware.recorded import RecordedNvml, load_table

FIXTURES = Path(__file__).parent / "fixtures" / "nvml"


def gpus(name: str) -> tuple[GpuInfo, ...]:
    return discover(RecordedNvml(load_table(FIXTURES / f"{name}.json")), no_identity).gpus


@pytest.fixture(scope="module")
def box() -> tuple[GpuInfo, ...]:
    return gpus("four_gpu_mixed")


def test_pci_bus_id_keeps_the_users_order(box):
    m = map_devices(box, [2, 0], PCI_BUS_ID)
    assert m.env == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "2,0"}
    assert m.lines == ("physical GPU 2 → cuda:0", "physical GPU 0 → cuda:1")
    other = map_devices(box, [0, 2], PCI_BUS_ID)
    assert other.visible_devices == "0,2" and other.physical == (0, 2)


def test_fastest_first_differs_from_pci_on_the_mixed_box(box):
    assert [g.index for g in pci_order(box)] == [0, 1, 2, 3]
    assert [g.index for g in fastest_first_order(box)] == [2, 1, 3, 0]  # 4090, A6000, A6000, 1080 Ti
    ordinals = cuda_ordinals(box)
    assert ordinals[0] == {PCI_BUS_ID: 0, FASTEST_FIRST: 3}
    assert ordinals[2] == {PCI_BUS_ID: 2, FASTEST_FIRST: 0}
    assert describe_ordinals(box)[0] == ("physical GPU 0 (NVIDIA GeForce GTX 1080 Ti): cuda:0 under PCI_BUS_ID, "
                                         "cuda:3 under FASTEST_FIRST (predicted)")


def test_fastest_first_selects_the_physical_gpus_by_uuid_in_the_users_order(box):
    m = map_devices(box, [2, 0], FASTEST_FIRST)
    assert m.device_order == FASTEST_FIRST
    assert m.visible_devices == f"{box[2].uuid},{box[0].uuid}"
    assert m.lines == ("physical GPU 2 → cuda:0", "physical GPU 0 → cuda:1")
    # an index here would have meant a different card: FASTEST_FIRST index 0 is GPU 2, index 2 is GPU 3
    assert map_devices(box, [0, 2], FASTEST_FIRST).physical == (0, 2)


def test_every_gpu_under_each_order(box):
    pci = map_devices(box, None, PCI_BUS_ID)
    assert pci.visible_devices == "0,1,2,3" and pci.physical == (0, 1, 2, 3)
    fast = map_devices(box, None, FASTEST_FIRST)
    assert fast.physical == (2, 1, 3, 0)
    assert fast.visible_devices.split(",") == [box[i].uuid for i in (2, 1, 3, 0)]
    assert fast.lines[0] == "physical GPU 2 → cuda:0"


def test_empty_selection_hides_every_gpu(box):
    for order in (PCI_BUS_ID, FASTEST_FIRST):
        m = map_devices(box, [], order)
        assert m.env == {"CUDA_DEVICE_ORDER": order, "CUDA_VISIBLE_DEVICES": ""}
        assert m.assignments == () and m.lines == ("no GPU visible (CUDA_VISIBLE_DEVICES is empty)",)


def test_selection_by_uuid_and_prefix(box):
    m = map_devices(box, [box[3].uuid, "GPU-40900a02"], PCI_BUS_ID)
    assert m.visible_devices == "3,2" and m.lines == ("physical GPU 3 → cuda:0", "physical GPU 2 → cuda:1")
    assert resolve("GPU-a6000", box) == (None, None)  # ambiguous prefix (two A6000s)
    assert resolve("GPU-a600", box) == (None, None)  # too short to trust
    assert resolve(" 1 ", box)[0].index == 1


def test_unknown_gpu_is_passed_through_and_named(box):
    m = map_devices(box, [7, 1], PCI_BUS_ID)
    assert m.visible_devices == "7,1"
    assert m.lines == ("GPU 7 (not found on this machine) → cuda:0", "physical GPU 1 → cuda:1")


def test_eight_h100_orders_agree():
    h100 = gpus("eight_h100")
    ordinals = cuda_ordinals(h100)
    assert all(o[PCI_BUS_ID] == o[FASTEST_FIRST] == i for i, o in ordinals.items())
    m = map_devices(h100, [7, 6, 5, 4], PCI_BUS_ID)
    assert m.visible_devices == "7,6,5,4" and m.physical == (7, 6, 5, 4)


def test_mig_instances_are_named_by_their_uuid():
    a100 = gpus("mig_a100")
    instance = a100[0].mig_devices[1]
    for order in (PCI_BUS_ID, FASTEST_FIRST):
        m = map_devices(a100, [instance.uuid], order)
        assert m.visible_devices == instance.uuid
        assert m.lines == (f"MIG instance {instance.uuid} of physical GPU 0 → cuda:0",)


def test_gpu_without_uuid_falls_back_to_its_predicted_index_and_says_so():
    (old,) = gpus("not_supported")
    m = map_devices((old,), [0], FASTEST_FIRST)
    assert m.visible_devices == "0" and m.physical == (0,)
    assert any("no readable UUID" in n for n in m.notes)
    assert map_devices((old,), [0], PCI_BUS_ID).visible_devices == "0"


def test_pci_numbering_follows_bus_ids_not_listing_order():
    # NVML lists by PCI bus already; should a table not, CUDA's PCI_BUS_ID numbering still sorts by bus
    a, b = GpuInfo(0, "A", "GPU-aaaaaaaa", pci_bus_id="00000000:81:00.0"), GpuInfo(1, "B", "GPU-bbbbbbbb", pci_bus_id="00000000:01:00.0")
    assert map_devices((a, b), [0], PCI_BUS_ID).visible_devices == "1"
    assert cuda_ordinals((a, b))[1][PCI_BUS_ID] == 0


def test_no_devices_known():
    m = map_devices((), [0, 1], PCI_BUS_ID)
    assert m.visible_devices == "0,1" and any("not verified" in n for n in m.notes)
    assert map_devices((), None, PCI_BUS_ID).visible_devices == ""


def test_bad_order_is_refused(box):
    with pytest.raises(ValueError, match="PCI_BUS_ID"):
        map_devices(box, [0], "SLOWEST_FIRST")


def test_mapping_is_pure(box):
    selection = [2, 0]
    assert map_devices(box, selection, FASTEST_FIRST) == map_devices(box, selection, FASTEST_FIRST)
    assert selection == [2, 0]


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.json")))
@pytest.mark.parametrize("order", [PCI_BUS_ID, FASTEST_FIRST])
def test_every_recorded_box_maps_every_gpu_once(name, order):
    box = gpus(name)
    m = map_devices(box, None, order)
    assert sorted(m.physical) == sorted(g.index for g in box)
    assert [a.cuda_index for a in m.assignments] == list(range(len(box)))
    assert len(m.visible_devices.split(",")) == len(box) or (not box and m.visible_devices == "")
    assert set(cuda_ordinals(box)) == {g.index for g in box}


def test_visible_gpus_inverts_every_mapping(box):
    """What a viewer needs: from a run's environment back to the physical GPUs its ranks use."""
    from tuitrain.hardware.mapping import visible_gpus

    for order in (PCI_BUS_ID, FASTEST_FIRST):
        for selection in (None, [2], [3, 0], [1, 2, 3]):
            mapping = map_devices(box, selection, order)
            env = {"CUDA_DEVICE_ORDER": order}
            if selection is not None:
                env["CUDA_VISIBLE_DEVICES"] = mapping.env["CUDA_VISIBLE_DEVICES"]
            assert [g.index for g in visible_gpus(env, box)] == [a.physical for a in mapping.assignments], (order, selection)
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": ""}, box) == []
    assert [g.index for g in visible_gpus({"CUDA_VISIBLE_DEVICES": "1,GPU-nonexistent,2", "CUDA_DEVICE_ORDER": PCI_BUS_ID},
                                          box)] == [1]  # CUDA stops at the first entry it cannot match
