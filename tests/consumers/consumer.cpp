/*
 * A downstream C++17 program, built like consumer.c (pkg-config or Meson
 * subproject): checks that <unifuse.h> works from C++ and that f16
 * conversion, the softmax forward and backward give the expected numbers.
 * One "OK" line per passed check; exit status 0, 1 on a failure, 77 without
 * a device.
 */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <unifuse.h>

namespace {

int failures = 0;

void check(bool ok, const std::string &what)
{
    std::printf("%s %s\n", ok ? "OK" : "FAIL", what.c_str());
    failures += ok ? 0 : 1;
}

void must(uf_status st, const char *call)
{
    if (st != UF_OK)
        throw std::runtime_error(std::string(call) + ": " + uf_status_string(st));
}

// Device memory holding a copy of a host vector, freed with the object.
template <typename T> class DeviceCopy {
  public:
    explicit DeviceCopy(const std::vector<T> &host) : count_(host.size())
    {
        must(uf_malloc(&ptr_, bytes()), "uf_malloc");
        must(uf_memcpy(ptr_, host.data(), bytes(), UF_HOST_TO_DEVICE, nullptr), "uf_memcpy");
    }
    ~DeviceCopy() { uf_free(ptr_); }
    DeviceCopy(const DeviceCopy &) = delete;
    DeviceCopy &operator=(const DeviceCopy &) = delete;

    void *get() const { return ptr_; }
    std::vector<T> download() const
    {
        std::vector<T> host(count_);
        must(uf_memcpy(host.data(), ptr_, bytes(), UF_DEVICE_TO_HOST, nullptr), "uf_memcpy");
        return host;
    }

  private:
    std::size_t bytes() const { return count_ * sizeof(T); }
    std::size_t count_;
    void *ptr_ = nullptr;
};

bool near(const std::vector<float> &got, const std::vector<float> &want, float tolerance)
{
    if (got.size() != want.size())
        return false;
    for (std::size_t i = 0; i < got.size(); i++)
        if (!(std::fabs(got[i] - want[i]) <= tolerance))
            return false;
    return true;
}

uf_softmax_desc rows_of_three(uf_dtype dtype, double scale)
{
    uf_softmax_desc d{};
    d.dtype = dtype;
    d.ndim = 2;
    d.shape[0] = 2;
    d.shape[1] = 3;
    d.scale = scale;
    return d;
}

// softmax in f16: x = log of {1, 3, 4} and {2, 1, 7}, converted on the host.
void check_f16_forward()
{
    const std::vector<float> x{0.0f, 1.0986123f, 1.3862944f, 0.6931472f, 0.0f, 1.9459101f};
    const std::vector<float> want{0.125f, 0.375f, 0.5f, 0.2f, 0.1f, 0.7f};
    std::vector<std::uint16_t> x16(x.size());
    must(uf_convert_host(x16.data(), UF_F16, x.data(), UF_F32, x.size()), "uf_convert_host");
    DeviceCopy<std::uint16_t> dx(x16), dy(x16);
    const uf_softmax_desc d = rows_of_three(UF_F16, 1.0);
    must(uf_softmax_forward(&d, dx.get(), nullptr, dy.get(), nullptr), "uf_softmax_forward");
    std::vector<float> y(x.size());
    must(uf_convert_host(y.data(), UF_F32, dy.download().data(), UF_F16, y.size()),
         "uf_convert_host");
    check(near(y, want, 1e-3f), "softmax_forward f16 [2, 3] (uf_convert_host)");
}

// dx = scale * y * (dy - sum(dy * y)): exact in binary for these values.
void check_f32_backward()
{
    const std::vector<float> y{0.125f, 0.375f, 0.5f, 0.25f, 0.25f, 0.5f};
    const std::vector<float> grad{1, 0, 0, 0, 0, 2};
    const std::vector<float> want{0.21875f, -0.09375f, -0.125f, -0.5f, -0.5f, 1.0f};
    DeviceCopy<float> y_dev(y), grad_dev(grad), dx_dev(grad);
    const uf_softmax_desc d = rows_of_three(UF_F32, 2.0);
    must(uf_softmax_backward(&d, y_dev.get(), grad_dev.get(), dx_dev.get(), nullptr),
         "uf_softmax_backward");
    check(near(dx_dev.download(), want, 1e-6f), "softmax_backward f32 [2, 3] scale 2");
}

} // namespace

int main()
{
    const std::string expected = std::to_string(UF_VERSION_MAJOR) + "." +
                                 std::to_string(UF_VERSION_MINOR) + "." +
                                 std::to_string(UF_VERSION_PATCH);
    check(expected == uf_version(), std::string("version ") + uf_version());

    uf_device_info info{};
    if (const uf_status st = uf_get_device_info(&info); st == UF_ERR_NO_DEVICE) {
        std::printf("SKIP no device: %s\n", uf_status_string(st));
        return 77;
    } else {
        check(st == UF_OK && info.warp_size > 0,
              std::string("device backend ") + uf_backend_name(info.backend) + " warp " +
                  std::to_string(info.warp_size) + " (" + info.name + ")");
    }

    try {
        check_f16_forward();
        check_f32_backward();
    } catch (const std::exception &e) {
        check(false, e.what());
    }

    const uf_softmax_desc bool_data = rows_of_three(UF_BOOL, 1.0);
    const uf_status st = uf_softmax_forward(&bool_data, nullptr, nullptr, nullptr, nullptr);
    check(st == UF_ERR_BAD_DTYPE,
          std::string("softmax_forward of bool data: ") + uf_status_string(st));

    std::printf("consumer-cpp: %s\n", failures ? "FAILED" : "all checks OK");
    return failures ? 1 : 0;
}
