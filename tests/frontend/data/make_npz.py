"""Writes named.npz and named_compressed.npz as numpy's np.savez / np.savez_compressed do
(zipfile members opened with force_zip64=True, stored or deflated) without needing numpy:
a = float32 [[0, 1, 2], [3, 4, 5]], b = int64 [7, -1]. Read by tests/frontend/npy_test.cc."""
import struct
import zipfile


def npy(descr, shape, data):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data


members = {"a.npy": npy("<f4", "(2, 3)", struct.pack("<6f", 0, 1, 2, 3, 4, 5)),
           "b.npy": npy("<i8", "(2,)", struct.pack("<2q", 7, -1))}
for path, compression in [("named.npz", zipfile.ZIP_STORED),
                          ("named_compressed.npz", zipfile.ZIP_DEFLATED)]:
    with zipfile.ZipFile(path, "w", compression=compression, allowZip64=True) as z:
        for name, data in members.items():
            with z.open(name, "w", force_zip64=True) as f:
                f.write(data)
