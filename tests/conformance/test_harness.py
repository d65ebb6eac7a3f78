#!/usr/bin/env python3
"""The conformance harness's own rules: what it masks, how it names kernels,
and that a trace differing from the expectation in any category fails."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance  # noqa: E402
from expectations import Expect  # noqa: E402

HEADER = ("time_ns,duration_ns,pid,tid,kind,source,name,bytes,copy_kind,stream,device,correlation,error,call_site,detail,"
          "calls\r\n")


def row(kind, name="", corr=1, bytes_="", copy_kind="", error="", detail="", source="host", calls=""):
    return f"1,1,1,1,{kind},{source},{name},{bytes_},{copy_kind},,0,{corr},{error},,\"{detail}\",{calls}\r\n"


# One cudaMemcpy up (recorded with its copy), one kernel launch, a driver
# call the runtime made under an unintercepted function, and a device record.
TRACE = HEADER + "".join([
    row("api_call", "cudaMemcpy", 1, error="0", detail="depth 0"),
    row("copy", corr=1, bytes_="400", copy_kind="HostToDevice", detail="Pageable -> Device"),
    row("api_call", "__cudaLaunchKernel", 2, error="0", detail="depth 0"),
    row("kernel", "_Z9vectorAddPKfS0_Pfi", 2, detail="grid 1x1x1, block 1x1x1, 0 B dynamic shared"),
    row("api_call", "cuDeviceGetCount", 3, error="0", detail="depth 0, driver API"),
    row("api_call", "cuMemcpyHtoD_v2", 1, error="0", detail="depth 1, driver API"),
    row("kernel", "_Z9vectorAddPKfS0_Pfi", 9, source="device", detail="grid 1x1x1"),
])
HOOKED = {"cudaMemcpy", "__cudaLaunchKernel", "cuDeviceGetCount"}


def expect(**changes):
    e = dict(calls={"cudaMemcpy": 1, "__cudaLaunchKernel": 1, "cudaGetLastError": 1},
             copies={"HostToDevice Pageable->Device": (1, 400)}, kernels={"vectorAdd": 1})
    e.update(changes)
    return Expect(**e)


def problems(e):
    return conformance.compare(e, conformance.Tally(TRACE, driver_api=set(), library_calls=False), HOOKED)


class Masking(unittest.TestCase):
    def test_timings_are_masked(self):
        cases = {
            "memcopy:\t0.85 ms": "memcopy:\t<t> ms",
            "Performance= 38293.42 GFlop/s, Time= 0.003 msec, Size= 131072000 Ops, WorkgroupSize= 1024 threads/block":
                "Performance= <t> GFlop/s, Time= <t> msec, Size= 131072000 Ops, WorkgroupSize= 1024 threads/block",
            "   Host to Device Bandwidth: 6.3 GB/s": "   Host to Device Bandwidth: <t> GB/s",
            "CPU executed 12 polls while waiting": "CPU executed <t> polls while waiting",
            "Average time per block: -3.50 clocks": "Average time per block: <t> clocks",
            "took 1.5e-3 s, or 2 seconds": "took <t> s, or <t> seconds",
        }
        for text, masked in cases.items():
            self.assertEqual(conformance.mask_timings(text), masked)

    def test_counts_are_not_masked(self):
        for text in ("4 streams:\t", "[Vector addition of 50000 elements]", "32 streams, two kernels each",
                     "Detected 2 CUDA Capable device(s)", "2D pitch: 1024 bytes", "sm_90 x86"):
            self.assertEqual(conformance.mask_timings(text), text)

    def test_stdout_differences_fail(self):
        self.assertEqual(conformance.compare_stdout("a 1.0 ms\nPASSED\n", "a 2.5 ms\nPASSED\n"), 1)
        with self.assertRaises(conformance.Failure):
            conformance.compare_stdout("n = 5\n", "n = 6\n")


class KernelNames(unittest.TestCase):
    def test_identifier_inside_mangled_name(self):
        self.assertTrue(conformance.kernel_matches("_Z9vectorAddPKfS0_Pfi", "vectorAdd"))
        self.assertTrue(conformance.kernel_matches("_ZN3foo5scaleEPf", "scale"))
        self.assertTrue(conformance.kernel_matches("plain_c_kernel", "plain_c_kernel"))
        self.assertFalse(conformance.kernel_matches("_Z10vectorAdd2Pf", "vectorAdd"))
        self.assertFalse(conformance.kernel_matches("_Z11scale_floatPf", "scale"))
        self.assertFalse(conformance.kernel_matches("_Z15scale_in_placePf", "scale"))


class Comparison(unittest.TestCase):
    def test_matching_trace_passes_and_reports_unhooked_calls(self):
        found, not_hooked = problems(expect())
        self.assertEqual(found, [])
        self.assertEqual(not_hooked, ["cudaGetLastError x1"])

    def test_driver_calls_under_runtime_calls_are_set_aside(self):
        tally = conformance.Tally(TRACE, driver_api=set(), library_calls=False)
        self.assertEqual(dict(tally.driver), {"cuDeviceGetCount": 1})
        self.assertNotIn("cuMemcpyHtoD_v2", tally.calls)  # nested: depth 1

    def test_device_memory_kinds_and_frees(self):
        trace = HEADER + "".join([
            row("api_call", "cudaMemcpyAsync", 1, error="0", detail="depth 0"),
            row("copy", corr=1, bytes_="8", copy_kind="DeviceToHost", detail="Pool -> Pinned, async"),
            row("api_call", "cudaFree", 2, error="0", detail="depth 0"),
            row("alloc", "Free", 2, bytes_="8", detail="address 0x10, Managed"),
            row("api_call", "cudaMallocManaged", 3, error="0", detail="depth 0"),
            row("alloc", "Alloc", 3, bytes_="8", detail="address 0x10, Managed"),
        ])
        tally = conformance.Tally(trace, driver_api=set(), library_calls=False)
        self.assertEqual(dict(tally.kinds["copies"]), {"DeviceToHost Device->Pinned async": 1})
        self.assertEqual(dict(tally.kinds["allocs"]), {"Free": 1, "Alloc Managed": 1})

    def test_graph_launches_captured_calls_and_prefetches(self):
        trace = HEADER + "".join([
            row("api_call", "cudaMemcpyAsync", 1, error="0", detail="depth 0, captured into a graph"),
            row("api_call", "cudaGraphLaunch", 2, error="0", detail="depth 0"),
            row("graph_launch", corr=2, detail="graph exec 0x5, 2 kernels, 2 copies, 0 memsets, 1 other nodes"),
            row("api_call", "cudaGraphLaunch", 3, error="0", detail="depth 0"),
            row("graph_launch", corr=3, detail="graph exec 0x6, contents unknown (not seen instantiated)"),
            row("api_call", "cudaMemPrefetchAsync", 4, error="0", detail="depth 0"),
            row("copy", corr=4, bytes_="64", copy_kind="HostToDevice", detail="Managed -> Managed, async, prefetch"),
        ])
        tally = conformance.Tally(trace, driver_api=set(), library_calls=False)
        self.assertEqual(dict(tally.captured), {"cudaMemcpyAsync": 1})
        self.assertEqual(dict(tally.graphs), {"launches": 2, "launches of unknown graphs": 1, "kernels": 2,
                                              "copies": 2, "memsets": 0, "other nodes": 1})
        self.assertEqual(dict(tally.kinds["copies"]), {"HostToDevice Managed->Managed async prefetch": 1})
        hooked = {"cudaMemcpyAsync", "cudaGraphLaunch", "cudaMemPrefetchAsync"}
        right = Expect(calls={"cudaMemcpyAsync": 1, "cudaGraphLaunch": 2, "cudaMemPrefetchAsync": 1},
                       captured={"cudaMemcpyAsync": 1},
                       graphs={"launches": 2, "launches of unknown graphs": 1, "kernels": 2, "copies": 2,
                               "other nodes": 1},
                       copies={"HostToDevice Managed->Managed async prefetch": (1, 64)})
        self.assertEqual(conformance.compare(right, tally, hooked)[0], [])
        for change in ({"captured": {}}, {"graphs": dict(right.graphs, kernels=4)}):
            wrong = Expect(**{**vars(right), **change})
            self.assertTrue(conformance.compare(wrong, tally, hooked)[0], f"{change} passed")

    def test_coalesced_polls_count_as_their_calls(self):
        trace = HEADER + "".join([
            row("api_call", "cudaEventQuery", 1, error="600", detail="depth 0, 41 polls coalesced", calls="41"),
            row("sync", "EventQuery", 1, error="600", detail="object 0x5", calls="41"),
            row("api_call", "cudaEventQuery", 2, error="0", detail="depth 0", calls="1"),
            row("sync", "EventQuery", 2, error="0", detail="object 0x5", calls="1"),
        ])
        tally = conformance.Tally(trace, driver_api=set(), library_calls=False)
        self.assertEqual(dict(tally.calls), {"cudaEventQuery": 42})
        self.assertEqual({k: dict(v) for k, v in tally.failures.items()}, {"cudaEventQuery": {600: 41}})
        self.assertEqual(dict(tally.kinds["syncs"]), {"EventQuery": 42})
        right = Expect(calls={"cudaEventQuery": 42}, failures={"cudaEventQuery": {600: 41}}, syncs={"EventQuery": 42})
        self.assertEqual(conformance.compare(right, tally, {"cudaEventQuery"})[0], [])
        wrong = Expect(calls={"cudaEventQuery": 2}, failures={"cudaEventQuery": {600: 1}}, syncs={"EventQuery": 2})
        self.assertEqual(len(conformance.compare(wrong, tally, {"cudaEventQuery"})[0]), 3)

    def test_every_category_is_compared(self):
        wrong = {
            "calls": {"cudaMemcpy": 2, "__cudaLaunchKernel": 1},
            "copies": {"HostToDevice Pageable->Device": (1, 401)},
            "kernels": {"vectorAdd": 2},
            "syncs": {"Device": 1},
            "memsets": {"Device": (1, 4)},
            "allocs": {"Alloc Device": (1, 4)},
            "failures": {"cudaMemcpy": {2: 1}},
        }
        for category, value in wrong.items():
            found, _ = problems(expect(**{category: value}))
            self.assertTrue(found, f"a wrong {category} expectation passed")

    def test_records_the_program_did_not_make_fail(self):
        found, _ = problems(expect(calls={"cudaMemcpy": 1}))
        self.assertIn("calls __cudaLaunchKernel: expected 0, trace has 1", found)
        found, _ = problems(expect(kernels={"other": 1}))
        self.assertTrue(any("which the program never launched" in p for p in found))

    def test_call_ranges(self):
        self.assertEqual(problems(expect(calls={"cudaMemcpy": (1, 3), "__cudaLaunchKernel": 1}))[0], [])
        self.assertTrue(problems(expect(calls={"cudaMemcpy": (2, 3), "__cudaLaunchKernel": 1}))[0])


class ElfSymbols(unittest.TestCase):
    def test_exports_and_imports(self):
        with open("/proc/self/maps") as maps:
            libc = next(line.split()[-1] for line in maps if "libc.so" in line)
        self.assertIn("malloc", conformance.dynamic_functions(libc, defined=True))
        self.assertNotIn("malloc", conformance.dynamic_functions(libc, defined=False))


if __name__ == "__main__":
    unittest.main()
