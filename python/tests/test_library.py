"""Finding and loading the library; statuses as UnifuseError."""

import ctypes
import os
import tempfile
import unittest
from unittest import mock

import unifuse_torch
from unifuse_torch import _library


class FindLibrary(unittest.TestCase):
    def test_explicit_path_wins(self):
        with tempfile.NamedTemporaryFile(suffix=".so") as f:
            with mock.patch.dict(os.environ, {"UNIFUSE_LIBRARY": f.name,
                                              "UNIFUSE_BUILD_DIR": "/nonexistent"}):
                self.assertEqual(_library.find_library(), os.path.abspath(f.name))

    def test_missing_explicit_path_raises(self):
        with mock.patch.dict(os.environ, {"UNIFUSE_LIBRARY": "/nonexistent/libunifuse.so"}):
            with self.assertRaises(OSError):
                _library.find_library()

    def test_build_dir_prefers_shortest_file_name(self):
        with tempfile.TemporaryDirectory() as d:
            for name in ("libunifuse.so.0.1.0", "libunifuse-openmp.so", "libunifuse.so.0",
                         "libunifuse.a"):
                open(os.path.join(d, name), "w").close()
            os.mkdir(os.path.join(d, "libunifuse.so.0.1.0.p"))  # meson's object folder
            env = {k: v for k, v in os.environ.items() if k != "UNIFUSE_LIBRARY"}
            env["UNIFUSE_BUILD_DIR"] = d
            with mock.patch.dict(os.environ, env, clear=True):
                self.assertEqual(os.path.basename(_library.find_library()), "libunifuse.so.0")

    def test_empty_build_dir_raises(self):
        with tempfile.TemporaryDirectory() as d:
            env = {k: v for k, v in os.environ.items() if k != "UNIFUSE_LIBRARY"}
            env["UNIFUSE_BUILD_DIR"] = d
            with mock.patch.dict(os.environ, env, clear=True):
                with self.assertRaises(OSError):
                    _library.find_library()


class LoadedLibrary(unittest.TestCase):
    def test_describes_itself(self):
        lib = unifuse_torch.library()
        self.assertRegex(lib.version, r"^\d+\.\d+\.\d+$")
        self.assertIn(lib.backend_name, ("openmp", "cuda", "hip"))
        self.assertTrue(lib.device_name)

    def test_struct_sizes_match_c(self):
        if ctypes.sizeof(ctypes.c_void_p) != 8:
            self.skipTest("sizes known for LP64 only")
        for struct, size in _library._LP64_SIZES.items():
            self.assertEqual(ctypes.sizeof(struct), size, struct.__name__)

    def test_status_becomes_unifuse_error_with_library_text(self):
        lib = unifuse_torch.library()
        with self.assertRaises(unifuse_torch.UnifuseError) as caught:
            lib.check("uf_example", 3)
        e = caught.exception
        self.assertEqual((e.status, e.function), (3, "uf_example"))
        self.assertEqual(e.status_text, lib.status_text(3))
        self.assertIn(lib.status_text(3), str(e))
        self.assertEqual(lib.status_text(12345), "unknown status")

    def test_missing_symbol_is_reported_by_name(self):
        lib = unifuse_torch.library()
        with self.assertRaises(unifuse_torch.MissingSymbolError) as caught:
            lib.function("uf_no_such_call")
        self.assertIn("uf_no_such_call", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
