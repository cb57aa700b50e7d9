from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0005_export_kind'),
    ]

    operations = [
        migrations.AlterField(
            model_name='job',
            name='kind',
            field=models.CharField(choices=[('train', 'Train'), ('infer', 'Infer'), ('export', 'Export'), ('evaluate', 'Evaluate')], max_length=16),
        ),
    ]
