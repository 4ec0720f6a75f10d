#!/usr/bin/python3
"""Writes the small .npy/.npz fixtures that tests/test_npy.cpp reads.

Run once, by hand, from anywhere: /usr/bin/python3 tests/data/npy/make_npy_fixtures.py
(numpy 1.24). The tests only read the files. Values are quarters (np.arange(...) / 4)
or small integers, so every number is exact in float32 and the tests compare exactly.
"""
import io
import os
import struct
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def path(name):
    return os.path.join(HERE, name)


def quarters(shape, dtype, start=0.0):
    """np.arange(n) / 4 + start in the given shape and dtype: start, start + 0.25, ..."""
    count = int(np.prod(shape))
    return (np.arange(count).reshape(shape) / 4 + start).astype(dtype)


def npy_bytes(array):
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array)
    return buffer.getvalue()


def zip64_npz(arrays, comment):
    """A stored zip using every zip64 record: 0xFFFFFFFF sizes and offsets in the central
    directory with their values in zip64 extra fields, a zip64 end of central directory
    record and its locator, and an archive comment after the end record."""
    out, central = bytearray(), bytearray()
    for name, array in arrays.items():
        data, file_name = npy_bytes(array), (name + ".npy").encode()
        crc, offset, size = zlib.crc32(data), len(out), len(data)
        local_extra = struct.pack("<HHQQ", 1, 16, size, size)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 0, 0, 0x21, crc,
                           0xFFFFFFFF, 0xFFFFFFFF, len(file_name), len(local_extra))
        out += file_name + local_extra + data
        central_extra = struct.pack("<HHQQQ", 1, 24, size, size, offset)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 0, 0, 0x21, crc,
                               0xFFFFFFFF, 0xFFFFFFFF, len(file_name), len(central_extra),
                               0, 0, 0, 0, 0xFFFFFFFF)
        central += file_name + central_extra
    count, central_offset = len(arrays), len(out)
    out += central
    zip64_end_offset = len(out)
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count, count,
                       len(central), central_offset)
    out += struct.pack("<IIQI", 0x07064B50, 0, zip64_end_offset, 1)
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF,
                       len(comment))
    return bytes(out + comment)


def main():
    np.save(path("float32.npy"), quarters((2, 3), np.float32))            # 0, 0.25, ..., 1.25
    np.save(path("float64_1d.npy"), quarters((5,), np.float64, -0.5))      # -0.5, ..., 0.5
    np.save(path("float32_3d.npy"), quarters((2, 3, 4), np.float32, -3))   # -3, ..., 2.75
    np.save(path("scalar.npy"), np.array(2.5, dtype=np.float32))          # shape ()
    np.save(path("bool_mask.npy"), np.tril(np.ones((3, 3), dtype=bool)))  # causal mask
    np.save(path("uint8_mask.npy"), np.array([[1, 0, 0], [1, 1, 0]], dtype=np.uint8))
    np.save(path("int64.npy"), np.array([-3, 0, 7, 2**40], dtype=np.int64))
    np.save(path("int32.npy"), np.array([[-2, -1], [0, 1]], dtype=np.int32))
    with open(path("version2.npy"), "wb") as f:
        np.lib.format.write_array(f, quarters((3,), np.float32), version=(2, 0))
    with open(path("version3.npy"), "wb") as f:
        np.lib.format.write_array(f, quarters((3,), np.float32), version=(3, 0))

    np.save(path("fortran.npy"), np.asfortranarray(quarters((2, 3), np.float32)))
    np.save(path("big_endian.npy"), quarters((4,), ">f4"))
    np.save(path("float16.npy"), quarters((3,), np.float16))

    several = {
        "x": quarters((2, 3), np.float32),
        "W_q.weight": quarters((2, 2), np.float64, -1),                   # -1, -0.75, -0.5, -0.25
        "mask": np.array([[True, False], [True, True]]),
    }
    np.savez(path("savez.npz"), **several)
    np.savez_compressed(path("savez_compressed.npz"), **several)
    np.savez(path("integers.npz"),
             i1=np.array([-128, 127], dtype=np.int8),
             u1=np.array([0, 255], dtype=np.uint8),
             i2=np.array([-32768, 32767], dtype=np.int16),
             u2=np.array([0, 65535], dtype=np.uint16),
             i4=np.array([-2**31, 2**31 - 1], dtype=np.int32),
             u4=np.array([0, 2**32 - 1], dtype=np.uint32),
             i8=np.array([-2**63, 2**62], dtype=np.int64),
             u8=np.array([0, 2**63], dtype=np.uint64))
    with open(path("zip64.npz"), "wb") as f:
        f.write(zip64_npz({"a": quarters((2,), np.float32), "b": quarters((1, 3), np.float32, 1)},
                          b"made by make_npy_fixtures.py"))

    with np.load(path("zip64.npz")) as check:  # numpy itself must accept the hand-made zip
        assert check["a"].tolist() == [0.0, 0.25] and check["b"].tolist() == [[1.0, 1.25, 1.5]]


if __name__ == "__main__":
    main()
